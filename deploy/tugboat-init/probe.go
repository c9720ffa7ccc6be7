package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"time"
)

// runProbe is the healthcheck of the FROM-scratch images (no curl there):
// GET the URL, succeed on a 2xx answer within the timeout. HTTPS is
// accepted without verifying the certificate — it checks liveness, not
// identity, and runs inside the container it checks.
func runProbe(ctx context.Context, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: tugboat-init probe URL")
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return probe(ctx, args[0])
}

func probe(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("probe URL %q: %v", url, err)
	}
	c := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // liveness only, see above
	}}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: %s: %s", url, resp.Status, body)
	}
	return nil
}
