package kubeapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/openapi"
)

// openAPIDocs are the OpenAPI documents, built once from the registry
// (package api/openapi): v2 as JSON and as the protobuf client-go asks
// for, v3 as one document per group version plus the index that points to
// them by hash (clients cache them by URL).
type openAPIDocs struct {
	v2JSON, v2Proto []byte
	v3Index         []byte
	v3              map[string][]byte // "api/v1" -> document
	v3Hash          map[string]string
	err             error
}

func newOpenAPIDocs(reg *registry, version string) *openAPIDocs {
	d := &openAPIDocs{v3: map[string][]byte{}, v3Hash: map[string]string{}}
	var all []openapi.Resource
	byGV := map[string][]openapi.Resource{}
	for _, r := range reg.all {
		or := openapi.Resource{Kind: r.kind, Status: r.kind.HasStatus(), Scale: r.scalable, GroupPath: openapi.GroupPath(r.groupVersion())}
		all = append(all, or)
		byGV[or.GroupPath] = append(byGV[or.GroupPath], or)
	}
	d.v2JSON, d.err = json.Marshal(openapi.V2Document(all, version))
	if d.err != nil {
		return d
	}
	doc, err := openapi_v2.ParseDocument(d.v2JSON)
	if err != nil {
		d.err = err
		return d
	}
	if d.v2Proto, d.err = proto.Marshal(doc); d.err != nil {
		return d
	}
	index := map[string]map[string]string{}
	for gp, rs := range byGV {
		b, err := json.Marshal(openapi.V3Document(rs, version))
		if err != nil {
			d.err = err
			return d
		}
		sum := sha256.Sum256(b)
		d.v3[gp], d.v3Hash[gp] = b, strings.ToUpper(hex.EncodeToString(sum[:]))
		index[gp] = map[string]string{"serverRelativeURL": "/openapi/v3/" + gp + "?hash=" + d.v3Hash[gp]}
	}
	d.v3Index, d.err = json.Marshal(map[string]any{"paths": index})
	return d
}

func (h *Handler) serveOpenAPI(w http.ResponseWriter, r *http.Request, path string) {
	d := h.openapi
	if d.err != nil {
		writeStatus(w, statusOf(d.err, target{}))
		return
	}
	write := func(ct string, b []byte) {
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(b)
	}
	switch {
	case path == "/openapi/v2":
		if strings.Contains(r.Header.Get("Accept"), "protobuf") {
			write("application/com.github.proto-openapi.spec.v2.v1.0+protobuf", d.v2Proto)
			return
		}
		write("application/json", d.v2JSON)
	case path == "/openapi/v3":
		w.Header().Set("Cache-Control", "no-cache, private")
		write("application/json", d.v3Index)
	default:
		gp := strings.TrimPrefix(path, "/openapi/v3/")
		b, ok := d.v3[gp]
		if !ok {
			writeStatus(w, notFound("the server could not find the requested resource"))
			return
		}
		if r.URL.Query().Get("hash") == d.v3Hash[gp] {
			w.Header().Set("Cache-Control", "public, immutable")
		} else {
			w.Header().Set("Cache-Control", "no-cache, private")
		}
		write("application/json", b)
	}
}
