package client

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// checkTokenTransport refuses to send a bearer token in the clear: a token
// needs TLS, unless the caller consented (AllowPlaintextToken) and the
// server is on this machine's loopback.
func checkTokenTransport(cfg Config, servers []string) error {
	if cfg.Token == "" || cfg.TLS != nil {
		return nil
	}
	if !cfg.AllowPlaintextToken {
		return fmt.Errorf("refusing to send a bearer token over plaintext to %s: give the cluster's CA so it goes over TLS (--ca-file ca.crt, or tugctl config set-cluster NAME --ca-file ca.crt); for a loopback development apiserver, --insecure-plaintext-token sends it anyway", cfg.Server)
	}
	for _, s := range servers {
		if !Loopback(s) {
			return fmt.Errorf("refusing to send a bearer token over plaintext to %s: --insecure-plaintext-token allows it only to a loopback address (127.0.0.1, ::1, localhost); give the cluster's CA (--ca-file) for any other", s)
		}
	}
	return nil
}

// Loopback reports whether a host:port address is on this machine's
// loopback (an IP in 127.0.0.0/8 or ::1, or "localhost").
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// transportHint explains a connection that fails because the client and
// the server disagree about TLS: it probes the server once, on the first
// such failure, and rewrites the error to say what it speaks and how to
// configure the client.
type transportHint struct {
	servers []string
	tls     bool
	once    sync.Once
	hint    string
}

func (h *transportHint) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	return h.explain(invoker(ctx, method, req, reply, cc, opts...))
}

func (h *transportHint) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	s, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		return nil, h.explain(err)
	}
	return hintedStream{ClientStream: s, h: h}, nil
}

type hintedStream struct {
	grpc.ClientStream
	h *transportHint
}

func (s hintedStream) RecvMsg(m any) error { return s.h.explain(s.ClientStream.RecvMsg(m)) }

func (h *transportHint) explain(err error) error {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.Unavailable {
		return err
	}
	msg := st.Message()
	mismatch := strings.Contains(msg, "server preface") || strings.Contains(msg, "first record does not look like a TLS handshake") ||
		strings.Contains(msg, "connection reset by peer") || strings.Contains(msg, "EOF")
	if !mismatch {
		return err
	}
	h.once.Do(func() { h.hint = h.probe() })
	if h.hint == "" {
		return err
	}
	return status.Errorf(codes.Unavailable, "%s (%s)", h.hint, msg)
}

// probe says what the first apiserver that answers really speaks, if it
// is not what the client does; "" when it cannot tell.
func (h *transportHint) probe() string {
	for _, s := range h.servers {
		if hint, answered := h.probeOne(s); answered {
			return hint
		}
	}
	return ""
}

func (h *transportHint) probeOne(server string) (hint string, answered bool) {
	conn, err := net.DialTimeout("tcp", server, 3*time.Second)
	if err != nil {
		return "", false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	tc := tls.Client(conn, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}}) // only asks whether it speaks TLS
	speaksTLS := tc.Handshake() == nil
	switch {
	case speaksTLS && !h.tls:
		return fmt.Sprintf("the apiserver at %s speaks TLS and this client plaintext: give it the cluster's CA (--ca-file ca.crt, or tugctl config set-cluster NAME --ca-file ca.crt; apiserver pki init wrote ca.crt)", server), true
	case !speaksTLS && h.tls:
		return fmt.Sprintf("the apiserver at %s does not speak TLS (was it started with --insecure?): connect without --ca-file, or start it with its certificates (--pki-dir)", server), true
	}
	return "", true
}
