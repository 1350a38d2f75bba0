// Command kvwriter is the k3s-shaped test node's datastore client: it writes to the etcd API of
// the node's kine (sqlite under <data-dir>/server/db) a few times a second, as a k3s server's API
// server does (leases, events, status), so that the datastore changes while a test copies it. It
// exits with an error when the API goes away (k3s stopped).
//
// Every write is a new key, /registry/clusterstorage/journal/<start>-<n>: kine keeps every row
// of a key that is never overwritten (no compaction removes it), so a test can tell from the
// sqlite file which writes a copy holds.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func main() {
	endpoint := flag.String("endpoint", "unix:///var/lib/rancher/k3s/server/kine.sock", "kine's etcd API")
	every := flag.Duration("every", 100*time.Millisecond, "time between writes")
	flag.Parse()

	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{*endpoint}, DialTimeout: 10 * time.Second})
	if err != nil {
		log.Fatalf("kvwriter: %v", err)
	}
	defer cli.Close() //nolint:errcheck // exiting
	start := time.Now().UnixNano()
	for n := 0; ; n++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := cli.Put(ctx, fmt.Sprintf("/registry/clusterstorage/journal/%d-%06d", start, n), time.Now().UTC().Format(time.RFC3339Nano))
		cancel()
		if err != nil {
			log.Fatalf("kvwriter: write %d: %v", n, err)
		}
		time.Sleep(*every)
	}
}
