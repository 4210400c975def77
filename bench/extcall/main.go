// extcall: what one filter call costs kube-scheduler's side, by its own code path
// (pkg/scheduler/extender.go HTTPExtender.Filter and send, v1.37.2) with the real types:
// the node-name map, the ExtenderArgs with the pod and N names, json.Marshal, POST on a
// kept-alive connection, json.Decoder into ExtenderFilterResult, the names mapped back.
// -serve ADDR answers every POST at once with a one-node result (a null extender).
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

func cpu() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func serve(addr string) {
	answer := []byte(`{"NodeNames":["gpu-b-00001"],"FailedNodes":{},"FailedAndUnresolvableNodes":{},"Error":""}`)
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	})
	fmt.Fprintln(os.Stderr, http.ListenAndServe(addr, nil))
}

func main() {
	addr := flag.String("serve", "", "answer as a null extender on this address")
	url := flag.String("url", "", "the extender's filter URL")
	podFile := flag.String("pod", "", "a Pod (JSON)")
	nodes := flag.Int("nodes", 5000, "node names per call")
	calls := flag.Int("calls", 500, "calls")
	flag.Parse()
	if *addr != "" {
		serve(*addr)
		return
	}
	var pod v1.Pod
	if b, err := os.ReadFile(*podFile); err != nil || json.Unmarshal(b, &pod) != nil {
		fmt.Fprintln(os.Stderr, "extcall: cannot read -pod", err)
		os.Exit(2)
	}
	names := make([]string, *nodes)
	for i := range names {
		names[i] = fmt.Sprintf("gpu-b-%05d", i+1)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2}, Timeout: 5 * time.Second}
	walls := make([]time.Duration, 0, *calls)
	var used time.Duration
	for i := 0; i < *calls; i++ {
		t0, c0 := time.Now(), cpu()
		from := make(map[string]int, len(names))
		for j, n := range names {
			from[n] = j
		}
		slice := make([]string, 0, len(names))
		slice = append(slice, names...)
		out, err := json.Marshal(&extenderv1.ExtenderArgs{Pod: &pod, NodeNames: &slice})
		if err != nil {
			panic(err)
		}
		req, _ := http.NewRequest("POST", *url, bytes.NewReader(out))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			panic(err)
		}
		var result extenderv1.ExtenderFilterResult
		err = json.NewDecoder(resp.Body).Decode(&result)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			panic(fmt.Sprint(err, resp.StatusCode))
		}
		kept := 0
		if result.NodeNames != nil {
			for _, n := range *result.NodeNames {
				if _, ok := from[n]; ok {
					kept++
				}
			}
		}
		if i >= *calls/10 { // warmed up
			walls = append(walls, time.Since(t0))
			used += cpu() - c0
		}
	}
	sort.Slice(walls, func(a, b int) bool { return walls[a] < walls[b] })
	fmt.Printf("%d names, %d calls: wall p50 %.3f ms, client CPU %.3f ms a call\n", *nodes,
		len(walls), float64(walls[len(walls)/2].Microseconds())/1000,
		float64(used.Microseconds())/float64(len(walls))/1000)
}
