package kube

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A request sent while nothing listens on the API server's address is sent again, body and all,
// once a server listens there: a POST is not lost to a restart.
func TestRetryUnreachable_waitsForTheServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() //nolint:errcheck // closed: connections to addr are refused until the server below listens

	var got []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body) //nolint:errcheck // an empty body fails the test below
		got = append(got, r.Method+" "+string(b))
		w.WriteHeader(http.StatusCreated)
	}))
	go func() {
		time.Sleep(700 * time.Millisecond)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("listening on %s again: %v", addr, err)
			return
		}
		srv.Listener = l
		srv.Start()
	}()
	t.Cleanup(func() {
		time.Sleep(800 * time.Millisecond) // the server above may still be starting
		srv.Close()
	})

	client := &http.Client{Transport: retryUnreachable(http.DefaultTransport)}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+addr+"/api/v1/persistentvolumes", strings.NewReader(`{"kind":"PersistentVolume"}`))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("the request failed instead of waiting for the server: %v", err)
	}
	resp.Body.Close() //nolint:errcheck // read nothing
	if resp.StatusCode != http.StatusCreated || len(got) != 1 || got[0] != `POST {"kind":"PersistentVolume"}` {
		t.Errorf("status %d, the server received %q", resp.StatusCode, got)
	}
	if waited := time.Since(start); waited < 600*time.Millisecond {
		t.Errorf("answered after %s, before the server listened", waited)
	}
}

// What is not a failure to connect is reported at once, and a request's deadline ends the wait.
func TestRetryUnreachable_onlyConnectionFailures(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hj, ok := w.(http.Hijacker); ok {
			conn, _, _ := hj.Hijack() //nolint:errcheck // the connection is closed either way
			conn.Close()              //nolint:errcheck // an answer cut short
		}
	}))
	t.Cleanup(srv.Close)
	client := &http.Client{Transport: retryUnreachable(http.DefaultTransport)}
	start := time.Now()
	resp, err := client.Post(srv.URL, "application/json", strings.NewReader("{}"))
	if err == nil {
		resp.Body.Close() //nolint:errcheck // read nothing
		t.Fatal("a connection closed without an answer reported no error")
	}
	if time.Since(start) > 200*time.Millisecond {
		t.Errorf("a connection cut after the request was sent was retried (%s): the server may have acted on it", time.Since(start))
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() //nolint:errcheck // nothing listens: refused
	ctx, cancel := context.WithTimeout(t.Context(), 600*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if resp, err := client.Do(req); err == nil {
		resp.Body.Close() //nolint:errcheck // read nothing
		t.Fatal("a server that never listens answered")
	} else if !notConnected(err) {
		t.Errorf("the error is not the connection's: %v", err)
	}
	if waited := time.Since(start); waited > 3*time.Second {
		t.Errorf("the request's deadline (600ms) did not end the wait: %s", waited)
	}
}
