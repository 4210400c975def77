// Command etcd is a single-member etcd for the e2e control plane: a thin main around
// go.etcd.io/etcd/server/v3/embed, so the rig needs no etcd download. Loopback only.
package main

import (
	"flag"
	"log"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

func main() {
	dataDir := flag.String("data-dir", "", "data directory (required)")
	client := flag.String("listen-client-urls", "http://127.0.0.1:2379", "client URL (loopback)")
	peer := flag.String("listen-peer-urls", "http://127.0.0.1:2380", "peer URL (loopback)")
	quota := flag.Int64("quota-backend-bytes", 2<<30, "backend quota")
	flag.Parse()
	if *dataDir == "" {
		log.Fatal("etcd: --data-dir is required")
	}
	cu, err := url.Parse(*client)
	if err != nil {
		log.Fatalf("etcd: --listen-client-urls: %v", err)
	}
	pu, err := url.Parse(*peer)
	if err != nil {
		log.Fatalf("etcd: --listen-peer-urls: %v", err)
	}

	cfg := embed.NewConfig()
	cfg.Name = "e2e"
	cfg.Dir = *dataDir
	cfg.ListenClientUrls = []url.URL{*cu}
	cfg.AdvertiseClientUrls = []url.URL{*cu}
	cfg.ListenPeerUrls = []url.URL{*pu}
	cfg.AdvertisePeerUrls = []url.URL{*pu}
	cfg.InitialCluster = cfg.Name + "=" + pu.String()
	cfg.QuotaBackendBytes = *quota
	cfg.LogLevel = "warn"
	// A test cluster: durability across a power cut is not needed, speed is.
	cfg.UnsafeNoFsync = true

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		log.Fatalf("etcd: start: %v", err)
	}
	defer e.Close()
	select {
	case <-e.Server.ReadyNotify():
		log.Printf("etcd: ready on %s", cu)
	case <-time.After(60 * time.Second):
		e.Server.Stop()
		log.Fatal("etcd: not ready after 60s")
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case s := <-sig:
		log.Printf("etcd: %v, stopping", s)
	case err := <-e.Err():
		log.Fatalf("etcd: %v", err)
	}
}
