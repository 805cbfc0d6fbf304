// Command etcd runs a single-member etcd (go.etcd.io/etcd/server/v3's embed package) on
// loopback for kaudit's real-cluster harness: client URL and data directory from flags, no
// TLS, logs at error level. It exits when etcd stops or on SIGINT/SIGTERM.
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
	dataDir := flag.String("data-dir", "", "etcd data directory")
	clientURL := flag.String("listen-client-url", "http://127.0.0.1:2379", "client URL")
	peerURL := flag.String("listen-peer-url", "http://127.0.0.1:2380", "peer URL")
	flag.Parse()
	if *dataDir == "" {
		log.Fatal("--data-dir is required")
	}
	cfg := embed.NewConfig()
	cfg.Dir = *dataDir
	cfg.LogLevel = "error"
	client, err := url.Parse(*clientURL)
	if err != nil {
		log.Fatalf("--listen-client-url: %v", err)
	}
	peer, err := url.Parse(*peerURL)
	if err != nil {
		log.Fatalf("--listen-peer-url: %v", err)
	}
	cfg.ListenClientUrls = []url.URL{*client}
	cfg.AdvertiseClientUrls = []url.URL{*client}
	cfg.ListenPeerUrls = []url.URL{*peer}
	cfg.AdvertisePeerUrls = []url.URL{*peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	// A test cluster: snapshots and compaction tuned for churn, not for durability.
	cfg.AutoCompactionMode = "periodic"
	cfg.AutoCompactionRetention = "5m"
	cfg.QuotaBackendBytes = 8 << 30
	server, err := embed.StartEtcd(cfg)
	if err != nil {
		log.Fatalf("starting etcd: %v", err)
	}
	defer server.Close()
	select {
	case <-server.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		server.Server.Stop()
		log.Fatal("etcd did not become ready within 60s")
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	select {
	case err := <-server.Err():
		log.Fatalf("etcd: %v", err)
	case <-signals:
	}
}
