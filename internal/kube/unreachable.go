package kube

import (
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"
)

// unreachableBudget is how long a request waits for an API server that refuses connections (a
// restart, an upgrade of the control plane, a load balancer switching over) before its error is
// reported; the request's own deadline ends it sooner.
var unreachableBudget = 90 * time.Second

// retryUnreachable wraps a client's transport: a request whose connection could not be made (the
// API server is not listening) is sent again, with backoff, until it connects or the budget or its
// context runs out. Only connection failures are retried: the request never reached the server,
// so even a create is safe to send again. Answers, including errors, are client-go's to handle (it
// already retries 429 and 5xx answers that carry Retry-After).
func retryUnreachable(next http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		start := time.Now()
		wait := 250 * time.Millisecond
		for attempt := 1; ; attempt++ {
			resp, err := next.RoundTrip(req)
			if err == nil || !notConnected(err) || time.Since(start)+wait > unreachableBudget || (req.Body != nil && req.GetBody == nil) {
				return resp, err
			}
			tflog.Warn(req.Context(), "the Kubernetes API server cannot be reached; trying again", map[string]any{
				"error": err.Error(), "attempt": attempt, "retry_in": wait.String(),
			})
			timer := time.NewTimer(wait)
			select {
			case <-req.Context().Done():
				timer.Stop()
				return nil, err
			case <-timer.C:
			}
			wait = min(2*wait, 4*time.Second)
			if req.GetBody != nil {
				body, bodyErr := req.GetBody()
				if bodyErr != nil {
					return nil, err
				}
				req = req.Clone(req.Context())
				req.Body = body
			}
		}
	})
}

// notConnected reports whether err is a failure to connect (the request was never sent).
func notConnected(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
