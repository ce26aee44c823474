package kubesecret

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// apiServer answers the Secret routes the way kube-apiserver does: bodies
// decoded strictly into k8s.io/api's core/v1 Secret, errors as
// k8s.io/apimachinery's meta/v1 Status, resourceVersion checked on update.
type apiServer struct {
	token string
	mu    sync.Mutex
	objs  map[string]*corev1.Secret // by namespace/name
	rv    int
}

func (a *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+a.token {
		writeStatus(w, apierrors.NewUnauthorized("bad token"))
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/api/v1/namespaces/"), "/")
	if len(parts) < 2 || parts[1] != "secrets" {
		http.NotFound(w, r)
		return
	}
	ns, name := parts[0], ""
	if len(parts) == 3 {
		name = parts[2]
	}
	gr := schema.GroupResource{Resource: "secrets"}
	a.mu.Lock()
	defer a.mu.Unlock()
	var in corev1.Secret
	if r.Method == http.MethodPost || r.Method == http.MethodPut {
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			writeStatus(w, apierrors.NewBadRequest(err.Error()))
			return
		}
		if in.APIVersion != "v1" || in.Kind != "Secret" || in.Namespace != ns {
			writeStatus(w, apierrors.NewBadRequest("apiVersion, kind or namespace mismatch"))
			return
		}
	}
	cur := a.objs[ns+"/"+name]
	switch {
	case r.Method == http.MethodGet && cur == nil:
		writeStatus(w, apierrors.NewNotFound(gr, name))
	case r.Method == http.MethodGet:
		_ = json.NewEncoder(w).Encode(cur)
	case r.Method == http.MethodPost && a.objs[ns+"/"+in.Name] != nil:
		writeStatus(w, apierrors.NewAlreadyExists(gr, in.Name))
	case r.Method == http.MethodPut && cur == nil:
		writeStatus(w, apierrors.NewNotFound(gr, name))
	case r.Method == http.MethodPut && in.ResourceVersion != "" && in.ResourceVersion != cur.ResourceVersion:
		writeStatus(w, apierrors.NewConflict(gr, name, errors.New("the object has been modified")))
	case r.Method == http.MethodPost || r.Method == http.MethodPut:
		a.rv++
		in.ResourceVersion = strconv.Itoa(a.rv)
		a.objs[ns+"/"+in.Name] = &in
		w.WriteHeader(map[string]int{http.MethodPost: http.StatusCreated, http.MethodPut: http.StatusOK}[r.Method])
		_ = json.NewEncoder(w).Encode(&in)
	default:
		writeStatus(w, apierrors.NewMethodNotSupported(gr, r.Method))
	}
}

func writeStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	st := err.Status()
	st.Kind, st.APIVersion = "Status", "v1"
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	_ = json.NewEncoder(w).Encode(&st)
}

// inCluster starts the API server and writes the service account files a
// pod would see; it returns the client and the server's store.
func inCluster(t *testing.T) (*Client, *apiServer) {
	t.Helper()
	api := &apiServer{token: "tok-123", objs: map[string]*corev1.Secret{}}
	srv := httptest.NewTLSServer(api)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	for name, body := range map[string][]byte{"token": []byte(api.token + "\n"), "namespace": []byte("llm"), "ca.crt": ca} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "https://"))
	t.Setenv("KUBERNETES_SERVICE_HOST", host)
	t.Setenv("KUBERNETES_SERVICE_PORT", port)
	c, err := InCluster(dir)
	if err != nil {
		t.Fatal(err)
	}
	return c, api
}

func TestSecretLifecycle(t *testing.T) {
	ctx := context.Background()
	c, api := inCluster(t)
	if c.Namespace != "llm" {
		t.Fatalf("namespace %q, want llm", c.Namespace)
	}
	if _, err := c.Get(ctx, "keys"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of a missing Secret: %v, want ErrNotFound", err)
	}
	want := map[string][]byte{"a.key": []byte("secret\n"), "a.pub": {0, 1, 2, 255}}
	s := &Secret{Metadata: ObjectMeta{Name: "keys", Annotations: map[string]string{"x/y": "1"}}, Type: "Opaque", Data: want}
	created, err := c.Create(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if created.Metadata.ResourceVersion == "" {
		t.Error("created Secret has no resourceVersion")
	}
	if _, err := c.Create(ctx, s); !errors.Is(err, ErrConflict) {
		t.Fatalf("second Create: %v, want ErrConflict", err)
	}
	got, err := c.Get(ctx, "keys")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Data["a.pub"], want["a.pub"]) || got.Metadata.Annotations["x/y"] != "1" || got.Type != "Opaque" {
		t.Fatalf("Get returned %+v", got)
	}
	stored := api.objs["llm/keys"]
	if string(stored.Data["a.key"]) != "secret\n" || stored.Type != corev1.SecretTypeOpaque {
		t.Fatalf("server stored %+v", stored)
	}

	got.Data = map[string][]byte{"b.key": []byte("new")}
	if _, err := c.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	got.Metadata.ResourceVersion = created.Metadata.ResourceVersion // stale
	_, err = c.Update(ctx, got)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("Update with a stale resourceVersion: %v, want ErrConflict", err)
	}
	var se *StatusError
	if !errors.As(err, &se) || se.Reason != string(metav1.StatusReasonConflict) {
		t.Fatalf("error %v: want a StatusError with reason Conflict", err)
	}
}

func TestInClusterErrors(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	if _, err := InCluster(t.TempDir()); err == nil || !strings.Contains(err.Error(), "KUBERNETES_SERVICE_HOST") {
		t.Fatalf("outside a pod: %v", err)
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
	t.Setenv("KUBERNETES_SERVICE_PORT", "443")
	if _, err := InCluster(t.TempDir()); err == nil || !strings.Contains(err.Error(), "token") {
		t.Fatalf("no token: %v", err)
	}
}

func TestBadToken(t *testing.T) {
	c, _ := inCluster(t)
	c.token = "wrong"
	_, err := c.Get(context.Background(), "keys")
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusUnauthorized {
		t.Fatalf("bad token: %v, want 401", err)
	}
}

func TestStatusErrorNotJSON(t *testing.T) {
	err := statusError(502, []byte("<html>bad gateway</html>"))
	var se *StatusError
	if !errors.As(err, &se) || se.Code != 502 || !strings.Contains(se.Message, "bad gateway") {
		t.Fatalf("got %v", err)
	}
}
