// Command fake-kubelet plays the kubelet of fake GPU nodes for the e2e control plane: it
// registers the nodes (objects from a NodeList file, optionally N generated copies for scale
// tests) with a Ready status, keeps them Ready with node status and Lease heartbeats, turns pods
// bound to them Running and Ready, and removes terminating pods once their grace period is over
// (as the kubelet does after the containers stop). No containers are run.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
)

type kubelet struct {
	cs        kubernetes.Interface
	mu        sync.Mutex
	nodes     map[string]bool // node name -> ours
	queue     workqueue.TypedRateLimitingInterface[string]
	podLister cache.Indexer
	leaseSecs int32
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the API server (required)")
	nodesFile := flag.String("nodes", "", "NodeList JSON whose nodes to register")
	generate := flag.Int("generate", 0, "also register this many copies of -template")
	template := flag.String("template", "gpu-node-b", "node of -nodes copied by -generate")
	prefix := flag.String("generate-prefix", "gpu-gen-", "name prefix of generated nodes")
	heartbeat := flag.Duration("heartbeat", 20*time.Second, "node status and Lease heartbeat period (0: none)")
	workers := flag.Int("workers", 4, "pod status workers")
	qps := flag.Float64("qps", 200, "client QPS")
	readyFile := flag.String("ready-file", "", "write this file once the nodes are registered")
	flag.Parse()
	if *kubeconfig == "" {
		log.Fatal("fake-kubelet: --kubeconfig is required")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Fatalf("fake-kubelet: kubeconfig: %v", err)
	}
	cfg.QPS = float32(*qps)
	cfg.Burst = int(*qps * 2)
	cfg.UserAgent = "fake-kubelet"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		log.Fatalf("fake-kubelet: client: %v", err)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()

	k := &kubelet{cs: cs, nodes: map[string]bool{}, leaseSecs: 40,
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}

	var defs []corev1.Node
	if *nodesFile != "" {
		defs, err = loadNodes(*nodesFile, *generate, *template, *prefix)
		if err != nil {
			log.Fatalf("fake-kubelet: %v", err)
		}
	}
	if err := k.register(ctx, defs); err != nil {
		log.Fatalf("fake-kubelet: register: %v", err)
	}
	log.Printf("fake-kubelet: %d nodes registered", len(defs))

	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermNotEqualSelector("spec.nodeName", "").String()
		}))
	inf := factory.Core().V1().Pods().Informer()
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			k.queue.Add(key)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		log.Fatalf("fake-kubelet: informer: %v", err)
	}
	k.podLister = inf.GetIndexer()
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		log.Fatal("fake-kubelet: pod informer did not sync")
	}
	for i := 0; i < *workers; i++ {
		go k.worker(ctx)
	}
	if *heartbeat > 0 {
		go k.heartbeats(ctx, *heartbeat)
	}
	if *readyFile != "" {
		if err := os.WriteFile(*readyFile, []byte("ready\n"), 0o644); err != nil {
			log.Fatalf("fake-kubelet: %v", err)
		}
	}
	log.Printf("fake-kubelet: running")
	<-ctx.Done()
	k.queue.ShutDown()
	log.Printf("fake-kubelet: stopping")
}

// loadNodes reads a NodeList (the demo cluster's nodes.json) and adds @n copies of @tmpl.
func loadNodes(path string, n int, tmpl, prefix string) ([]corev1.Node, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var list corev1.NodeList
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var src *corev1.Node
	for i := range list.Items {
		if list.Items[i].Name == tmpl {
			src = &list.Items[i]
		}
	}
	if n > 0 && src == nil {
		return nil, fmt.Errorf("%s: no node %q to copy", path, tmpl)
	}
	out := list.Items
	for i := 0; i < n; i++ {
		c := src.DeepCopy()
		c.Name = fmt.Sprintf("%s%05d", prefix, i)
		c.Labels["kubernetes.io/hostname"] = c.Name
		out = append(out, *c)
	}
	return out, nil
}

func readyConditions(now metav1.Time) []corev1.NodeCondition {
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: msg,
			LastHeartbeatTime: now, LastTransitionTime: now}
	}
	return []corev1.NodeCondition{
		cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "fake-kubelet"),
		cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "fake-kubelet"),
		cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "fake-kubelet"),
		cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "fake-kubelet is posting ready status"),
	}
}

// register creates the nodes (or takes over existing ones) and sets their status Ready with the
// capacity and allocatable of the definition, as a kubelet and the device plugin would.
func (k *kubelet) register(ctx context.Context, defs []corev1.Node) error {
	sem := make(chan struct{}, 16)
	errs := make(chan error, len(defs))
	var wg sync.WaitGroup
	for i := range defs {
		d := defs[i]
		k.mu.Lock()
		k.nodes[d.Name] = true
		k.mu.Unlock()
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := k.registerOne(ctx, d); err != nil {
				errs <- fmt.Errorf("node %s: %w", d.Name, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func (k *kubelet) registerOne(ctx context.Context, d corev1.Node) error {
	status := d.Status
	obj := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: d.Name, Labels: d.Labels, Annotations: d.Annotations},
		Spec: corev1.NodeSpec{Taints: d.Spec.Taints, PodCIDR: d.Spec.PodCIDR, PodCIDRs: d.Spec.PodCIDRs}}
	n, err := k.cs.CoreV1().Nodes().Create(ctx, &obj, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		n, err = k.cs.CoreV1().Nodes().Get(ctx, d.Name, metav1.GetOptions{})
	}
	if err != nil {
		return err
	}
	now := metav1.Now()
	n.Status.Capacity = status.Capacity
	n.Status.Allocatable = status.Allocatable
	n.Status.Conditions = readyConditions(now)
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"},
		{Type: corev1.NodeHostName, Address: d.Name}}
	n.Status.NodeInfo = status.NodeInfo
	n.Status.NodeInfo.KubeletVersion = "fake-kubelet"
	n.Status.Phase = ""
	n, err = k.cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	// The TaintNodesByCondition admission plugin taints every new node not-ready; the node
	// lifecycle controller (there is no kube-controller-manager here) lifts it once the node
	// reports Ready. Do its part.
	for {
		taints := n.Spec.Taints[:0:0]
		for _, t := range n.Spec.Taints {
			if t.Key != corev1.TaintNodeNotReady && t.Key != corev1.TaintNodeUnreachable {
				taints = append(taints, t)
			}
		}
		if len(taints) == len(n.Spec.Taints) {
			return nil
		}
		n.Spec.Taints = taints
		_, err = k.cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			return err
		}
		if n, err = k.cs.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{}); err != nil {
			return err
		}
	}
}

// heartbeats refreshes each node's conditions and its Lease in kube-node-lease, as the kubelet
// does, spread over the period.
func (k *kubelet) heartbeats(ctx context.Context, period time.Duration) {
	for {
		k.mu.Lock()
		names := make([]string, 0, len(k.nodes))
		for n := range k.nodes {
			names = append(names, n)
		}
		k.mu.Unlock()
		gap := period / time.Duration(len(names)+1)
		for _, name := range names {
			select {
			case <-ctx.Done():
				return
			case <-time.After(gap):
			}
			if err := k.heartbeat(ctx, name); err != nil && ctx.Err() == nil {
				log.Printf("fake-kubelet: heartbeat %s: %v", name, err)
			}
		}
	}
}

func (k *kubelet) heartbeat(ctx context.Context, name string) error {
	now := metav1.NewMicroTime(time.Now())
	leases := k.cs.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	l, err := leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		l = &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceNodeLease},
			Spec: coordv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To(k.leaseSecs), RenewTime: &now}}
		_, err = leases.Create(ctx, l, metav1.CreateOptions{})
	} else if err == nil {
		l.Spec.RenewTime = &now
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	}
	if err != nil {
		return err
	}
	n, err := k.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	hb := metav1.Now()
	for i := range n.Status.Conditions {
		n.Status.Conditions[i].LastHeartbeatTime = hb
	}
	_, err = k.cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	return err
}

func (k *kubelet) ours(node string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.nodes[node]
}

func (k *kubelet) worker(ctx context.Context) {
	for {
		key, quit := k.queue.Get()
		if quit {
			return
		}
		retry, err := k.sync(ctx, key)
		switch {
		case err != nil && ctx.Err() == nil:
			if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				log.Printf("fake-kubelet: pod %s: %v", key, err)
			}
			k.queue.AddRateLimited(key)
		case retry > 0:
			k.queue.Forget(key)
			k.queue.AddAfter(key, retry)
		default:
			k.queue.Forget(key)
		}
		k.queue.Done(key)
	}
}

// sync moves one pod along its kubelet lifecycle; a positive duration asks to look again then.
func (k *kubelet) sync(ctx context.Context, key string) (time.Duration, error) {
	obj, exists, err := k.podLister.GetByKey(key)
	if err != nil || !exists {
		return 0, err
	}
	pod := obj.(*corev1.Pod)
	if !k.ours(pod.Spec.NodeName) {
		return 0, nil
	}
	pods := k.cs.CoreV1().Pods(pod.Namespace)
	if pod.DeletionTimestamp != nil {
		// The containers "stop" at once; the pod object goes when its grace period is over.
		if wait := time.Until(pod.DeletionTimestamp.Time); wait > 0 {
			return wait, nil
		}
		err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0),
			Preconditions: &metav1.Preconditions{UID: &pod.UID}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return 0, nil
		}
		return 0, err
	}
	if pod.Status.Phase == corev1.PodRunning || pod.Status.Phase == corev1.PodSucceeded ||
		pod.Status.Phase == corev1.PodFailed {
		return 0, nil
	}
	p := pod.DeepCopy()
	now := metav1.Now()
	p.Status.Phase = corev1.PodRunning
	p.Status.HostIP = "127.0.0.1"
	p.Status.HostIPs = []corev1.HostIP{{IP: "127.0.0.1"}}
	p.Status.StartTime = &now
	setCond := func(t corev1.PodConditionType) {
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == t {
				p.Status.Conditions[i].Status = corev1.ConditionTrue
				p.Status.Conditions[i].LastTransitionTime = now
				return
			}
		}
		p.Status.Conditions = append(p.Status.Conditions,
			corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	for _, t := range []corev1.PodConditionType{corev1.PodInitialized, corev1.PodReadyToStartContainers,
		corev1.ContainersReady, corev1.PodReady} {
		setCond(t)
	}
	p.Status.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: "fake://" + strings.ReplaceAll(c.Image, ":", "@"),
			ContainerID: "fake://" + string(p.UID) + "/" + c.Name, Ready: true, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}})
	}
	_, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
	return 0, err
}
