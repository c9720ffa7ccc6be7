package kubeapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// exec and attach over WebSocket: Kubernetes' remote command channel
// protocol (v5.channel.k8s.io, which kubectl ≥ 1.30 speaks, and v4).
// Every binary message starts with its channel: 0 stdin, 1 stdout, 2
// stderr, 3 the final Status, 4 a terminal resize ({"Width":..,
// "Height":..}); in v5, [255, 0] says the client closed stdin. The
// streams are relayed to NodeAPI.Exec or NodeAPI.Attach, which reach the
// pod's kubelet over its tunnel.

const (
	chanStdin  = 0
	chanStdout = 1
	chanStderr = 2
	chanError  = 3
	chanResize = 4
	chanClose  = 255
)

var channelProtocols = []string{"v5.channel.k8s.io", "v4.channel.k8s.io"}

var upgrader = websocket.Upgrader{
	Subprotocols:    append(append([]string(nil), channelProtocols...), tunnelProtocols...),
	ReadBufferSize:  32 << 10,
	WriteBufferSize: 32 << 10,
	// Browsers are not clients of this door; every client authenticates.
	CheckOrigin: func(*http.Request) bool { return true },
}

// stream serves exec, attach and portforward.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, q *request) error {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		return methodNotAllowed(r)
	}
	if r.Header.Get("Origin") != "" {
		// Browsers send Origin on every WebSocket; kubectl and client-go
		// never do. A page must not reach exec or port-forward with a
		// client certificate the browser holds.
		return apierrors.New(apierrors.ErrForbidden, "%s from a web page (Origin %q) is refused", q.sub, r.Header.Get("Origin"))
	}
	spdy := isSPDYUpgrade(r)
	if !websocket.IsWebSocketUpgrade(r) && !spdy {
		return apierrors.New(apierrors.ErrBadRequest, "%s needs a WebSocket upgrade (protocol %s) or a SPDY one", q.sub, channelProtocols[0])
	}
	// Refuse before the upgrade, with the right code, what the relay would
	// refuse: no permission (403), no such pod (404). The relay checks again.
	if err := h.allowed(r.Context(), "create", "pods/"+q.sub, q.namespace, q.name); err != nil {
		return err
	}
	if _, err := h.getObject(r.Context(), &request{res: q.res, namespace: q.namespace, name: q.name}); err != nil {
		return err
	}
	if q.sub == "portforward" {
		if spdy {
			return h.portForwardSPDY(w, r, q)
		}
		return h.portForwardWebSocket(w, r, q)
	}
	start, err := execStart(r, q)
	if err != nil {
		return err
	}
	if spdy {
		return h.execSPDY(w, r, q.sub, start)
	}
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return nil // the upgrader answered the client
	}
	defer conn.Close()
	h.relayExec(r.Context(), conn, q.sub, start)
	return nil
}

// allowed asks the authorizer (Auth.Review) whether the caller may do verb
// on resource, so that a refusal is an HTTP 403 before a stream opens.
func (h *Handler) allowed(ctx context.Context, verb, resource, ns, name string) error {
	req := &v1.AccessReviewRequest{Verb: verb, Resource: resource, Namespace: ns, Name: name}
	out, err := h.b.Call(ctx, authService+"Review", req, func(ctx context.Context) (any, error) { return h.b.Auth().Review(ctx, req) })
	if err != nil {
		return apierrors.FromGRPC(err)
	}
	if resp := out.(*v1.AccessReviewResponse); !resp.Allowed {
		return apierrors.New(apierrors.ErrForbidden, "%s", resp.Reason)
	}
	return nil
}

func boolParam(r *http.Request, name string) bool {
	v := r.URL.Query().Get(name)
	b, _ := strconv.ParseBool(v)
	return b
}

func execStart(r *http.Request, q *request) (*v1.ExecStart, error) {
	p := r.URL.Query()
	s := &v1.ExecStart{Namespace: q.namespace, Pod: q.name, Container: p.Get("container"), Command: p["command"],
		Stdin: boolParam(r, "stdin"), Tty: boolParam(r, "tty")}
	if q.sub == "exec" && len(s.Command) == 0 {
		return nil, apierrors.Invalid("command", "required: give the command to run")
	}
	if q.sub == "attach" {
		s.Command = nil
	}
	return s, nil
}

// wsWriter writes channel messages; gorilla allows one writer at a time.
type wsWriter struct {
	mu   sync.Mutex
	conn *websocket.Conn
}

func (w *wsWriter) send(channel byte, b []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	msg := make([]byte, 1+len(b))
	msg[0] = channel
	copy(msg[1:], b)
	_ = w.conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
	return w.conn.WriteMessage(websocket.BinaryMessage, msg)
}

// relayExec runs the NodeAPI call and pipes the channels both ways, then
// writes the exit Status on channel 3 and closes the connection.
func (h *Handler) relayExec(ctx context.Context, conn *websocket.Conn, sub string, start *v1.ExecStart) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := &wsWriter{conn: conn}
	inputs := make(chan *v1.ExecInput, 16)
	inputs <- &v1.ExecInput{Start: start}
	go readChannels(ctx, conn, inputs, cancel)
	exited, code, err := h.runExec(ctx, sub, start, inputs,
		func(b []byte) error { return out.send(chanStdout, b) }, func(b []byte) error { return out.send(chanStderr, b) })
	if sub == "attach" {
		exited = false // an attach that ended is a Success, whatever the code (attachStatus)
	}
	st := exitStatus(err, exited, code)
	b, _ := json.Marshal(st)
	_ = out.send(chanError, b)
	out.mu.Lock()
	_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	out.mu.Unlock()
}

// runExec runs NodeAPI.Exec (Attach, for sub attach) with the inputs (the
// first is start; a closed channel is the end of input) and writes the
// command's output with stdout and stderr; it reports how the command
// ended.
func (h *Handler) runExec(ctx context.Context, sub string, start *v1.ExecStart, inputs <-chan *v1.ExecInput, stdout, stderr func([]byte) error) (exited bool, code int32, err error) {
	stream := &localStream[v1.ExecInput, v1.ExecOutput]{ctx: ctx,
		recv: func() (*v1.ExecInput, error) {
			select {
			case in, ok := <-inputs:
				if !ok {
					return nil, io.EOF
				}
				return in, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
		send: func(o *v1.ExecOutput) error {
			if len(o.Stdout) > 0 {
				if err := stdout(o.Stdout); err != nil {
					return err
				}
			}
			if len(o.Stderr) > 0 {
				if err := stderr(o.Stderr); err != nil {
					return err
				}
			}
			if o.Exited {
				exited, code = true, o.ExitCode
			}
			return nil
		}}
	method, run := "Exec", h.b.Nodes().Exec
	if sub == "attach" {
		method, run = "Attach", h.b.Nodes().Attach
	}
	_, err = h.b.Call(ctx, nodeService+method, start, func(ctx context.Context) (any, error) {
		stream.ctx = ctx
		return nil, run(stream)
	})
	return exited, code, err
}

// readChannels turns the client's messages into ExecInputs until it goes.
func readChannels(ctx context.Context, conn *websocket.Conn, inputs chan<- *v1.ExecInput, cancel func()) {
	defer close(inputs)
	for {
		typ, msg, err := conn.ReadMessage()
		if err != nil {
			if !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
				cancel() // the client went away: stop the command's stream
			}
			return
		}
		if typ != websocket.BinaryMessage || len(msg) == 0 {
			continue
		}
		var in *v1.ExecInput
		switch msg[0] {
		case chanStdin:
			in = &v1.ExecInput{Stdin: append([]byte(nil), msg[1:]...)}
		case chanResize:
			var sz struct{ Width, Height uint16 }
			if json.Unmarshal(msg[1:], &sz) != nil {
				continue
			}
			in = &v1.ExecInput{Resize: &v1.TerminalSize{Width: uint32(sz.Width), Height: uint32(sz.Height)}}
		case chanClose:
			if len(msg) > 1 && msg[1] == chanStdin {
				in = &v1.ExecInput{StdinEof: true}
			}
		}
		if in == nil {
			continue
		}
		select {
		case inputs <- in:
		case <-ctx.Done():
			return
		}
	}
}

// exitStatus is the Status on channel 3: Success, NonZeroExitCode with
// the code as a cause, or the relay's error.
//
// An attach reports Success when the stream ends, also when the process
// exited non-zero, as the kubelet's streaming server does (ServeAttach
// writes Success whenever AttachContainer returns, and a runtime's attach
// returns when the process's streams end): so kubectl attach and kubectl
// debug -it exit 0 after the session, as against Kubernetes, and the
// exit code is in the container's status. Only exec carries the code.
func exitStatus(err error, exited bool, code int32) *Status {
	if err != nil && !errors.Is(err, context.Canceled) {
		st := statusOf(err, target{})
		return st
	}
	if !exited || code == 0 {
		return &Status{Kind: "Status", APIVersion: "v1", Status: "Success"}
	}
	return &Status{Kind: "Status", APIVersion: "v1", Status: "Failure", Reason: "NonZeroExitCode",
		Message: fmt.Sprintf("command terminated with non-zero exit code: exit status %d", code),
		Details: &StatusDetails{Causes: []StatusCause{{Type: "ExitCode", Message: strconv.Itoa(int(code))}}}}
}
