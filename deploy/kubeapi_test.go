package deploy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// apiServer is the part of kube-apiserver the deploy files' pods talk to:
// Secrets (get, create, update) in a namespace, for bearer tokens of
// service accounts, authorized by the Roles and RoleBindings the files
// create (RBAC's rules for namespaced resources). Bodies are decoded
// strictly into k8s.io/api types and errors are apimachinery's Status, so a
// client that speaks the API wrongly fails here as it would in a cluster.
type apiServer struct {
	srv  *httptest.Server
	host string // address and port the pods dial
	port int
	ca   []byte // PEM of the CA that signed the server's certificate

	mu       sync.Mutex
	rv       int
	secrets  map[string]*corev1.Secret // by namespace/name
	roles    map[string]*rbacv1.Role
	bindings []*rbacv1.RoleBinding
	tokens   map[string]string // bearer token → namespace/service account
	log      []string          // "SA VERB secrets/NAME → CODE", for failures
}

// newAPIServer serves TLS on ip with a certificate for ip and the
// kubernetes.default.svc names.
func newAPIServer(t *testing.T, ip string) *apiServer {
	t.Helper()
	a := &apiServer{secrets: map[string]*corev1.Secret{}, roles: map[string]*rbacv1.Role{}, tokens: map[string]string{}}
	cert, caPEM, err := serverCert(ip)
	if err != nil {
		t.Fatal(err)
	}
	a.ca = caPEM
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	a.srv = httptest.NewUnstartedServer(http.HandlerFunc(a.serve))
	a.srv.Listener = ln
	a.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	a.srv.StartTLS()
	t.Cleanup(a.srv.Close)
	a.host = ip
	a.port = ln.Addr().(*net.TCPAddr).Port
	return a
}

// serverCert makes a CA and a server certificate it signs.
func serverCert(ip string) (tls.Certificate, []byte, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tandem-deploytest-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP(ip)},
		DNSNames:    []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), nil
}

// requests is the log of the requests served: "SA VERB secrets/NAME → CODE".
func (a *apiServer) requests() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string{}, a.log...)
}

// token issues a bearer token for a service account.
func (a *apiServer) token(namespace, sa string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	tok := "tok-" + randomHex(16)
	a.tokens[tok] = namespace + "/" + sa
	return tok
}

// add stores an object a manifest creates (the kinds the API serves or
// authorizes with).
func (a *apiServer) add(obj any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch o := obj.(type) {
	case *corev1.Secret:
		a.rv++
		s := o.DeepCopy()
		s.ResourceVersion = strconv.Itoa(a.rv)
		a.secrets[s.Namespace+"/"+s.Name] = s
	case *rbacv1.Role:
		a.roles[o.Namespace+"/"+o.Name] = o
	case *rbacv1.RoleBinding:
		a.bindings = append(a.bindings, o)
	}
}

// secret returns a stored Secret, or nil.
func (a *apiServer) secret(namespace, name string) *corev1.Secret {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s := a.secrets[namespace+"/"+name]; s != nil {
		return s.DeepCopy()
	}
	return nil
}

// allowed evaluates RBAC for a service account: some RoleBinding in the
// namespace binds it to a Role with a rule for the verb on secrets (and,
// for a rule that lists resourceNames, on that name; create never matches
// those, as in Kubernetes).
func (a *apiServer) allowed(sa, verb, name string) bool {
	ns, saName, _ := strings.Cut(sa, "/")
	for _, b := range a.bindings {
		if b.Namespace != ns || b.RoleRef.Kind != "Role" {
			continue
		}
		bound := false
		for _, s := range b.Subjects {
			sns := s.Namespace
			if sns == "" {
				sns = b.Namespace
			}
			bound = bound || s.Kind == "ServiceAccount" && s.Name == saName && sns == ns
		}
		role := a.roles[ns+"/"+b.RoleRef.Name]
		if !bound || role == nil {
			continue
		}
		for _, r := range role.Rules {
			if !contains(r.APIGroups, "") && !contains(r.APIGroups, "*") ||
				!contains(r.Resources, "secrets") && !contains(r.Resources, "*") ||
				!contains(r.Verbs, verb) && !contains(r.Verbs, "*") {
				continue
			}
			if len(r.ResourceNames) == 0 || verb != "create" && contains(r.ResourceNames, name) {
				return true
			}
		}
	}
	return false
}

func (a *apiServer) serve(w http.ResponseWriter, r *http.Request) {
	gr := schema.GroupResource{Resource: "secrets"}
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	a.mu.Lock()
	defer a.mu.Unlock()
	sa, ok := a.tokens[tok]
	if !ok {
		writeStatus(w, apierrors.NewUnauthorized("invalid bearer token"))
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/api/v1/namespaces/"), "/")
	if !strings.HasPrefix(r.URL.Path, "/api/v1/namespaces/") || len(parts) < 2 || len(parts) > 3 || parts[1] != "secrets" {
		writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Resource: r.URL.Path}, ""))
		return
	}
	ns, name := parts[0], ""
	if len(parts) == 3 {
		name = parts[2]
	}
	verb := map[string]string{http.MethodGet: "get", http.MethodPost: "create", http.MethodPut: "update"}[r.Method]
	if name == "" && verb == "get" {
		verb = "list"
	}
	var in corev1.Secret
	if verb == "create" || verb == "update" {
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			writeStatus(w, apierrors.NewBadRequest("decoding the Secret: "+err.Error()))
			return
		}
		if verb == "create" {
			name = in.Name
		}
	}
	code := a.handle(w, sa, verb, ns, name, gr, &in)
	a.log = append(a.log, fmt.Sprintf("%s %s secrets/%s → %d", sa, verb, name, code))
}

func (a *apiServer) handle(w http.ResponseWriter, sa, verb, ns, name string, gr schema.GroupResource, in *corev1.Secret) int {
	reply := func(err *apierrors.StatusError) int { writeStatus(w, err); return int(err.Status().Code) }
	if verb == "" || verb == "list" {
		return reply(apierrors.NewMethodNotSupported(gr, verb))
	}
	if !a.allowed(sa, verb, name) {
		return reply(apierrors.NewForbidden(gr, name, fmt.Errorf("service account %s cannot %s secrets", sa, verb)))
	}
	cur := a.secrets[ns+"/"+name]
	switch verb {
	case "get":
		if cur == nil {
			return reply(apierrors.NewNotFound(gr, name))
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(cur)
		return http.StatusOK
	case "create":
		if in.APIVersion != "v1" || in.Kind != "Secret" || in.Namespace != "" && in.Namespace != ns {
			return reply(apierrors.NewBadRequest(fmt.Sprintf("apiVersion %q kind %q namespace %q", in.APIVersion, in.Kind, in.Namespace)))
		}
		if cur != nil {
			return reply(apierrors.NewAlreadyExists(gr, name))
		}
	case "update":
		if in.Name != name || in.Namespace != "" && in.Namespace != ns {
			return reply(apierrors.NewBadRequest("name or namespace does not match the URL"))
		}
		if cur == nil {
			return reply(apierrors.NewNotFound(gr, name))
		}
		if in.ResourceVersion != "" && in.ResourceVersion != cur.ResourceVersion {
			return reply(apierrors.NewConflict(gr, name, errors.New("the object has been modified; please apply your changes to the latest version and try again")))
		}
	}
	a.rv++
	in.Namespace, in.ResourceVersion = ns, strconv.Itoa(a.rv)
	a.secrets[ns+"/"+name] = in.DeepCopy()
	code := map[string]int{"create": http.StatusCreated, "update": http.StatusOK}[verb]
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(in)
	return code
}

func writeStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	st := err.Status()
	st.Kind, st.APIVersion = "Status", "v1"
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	_ = json.NewEncoder(w).Encode(&st)
}
