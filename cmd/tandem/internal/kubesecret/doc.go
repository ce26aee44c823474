// Package kubesecret reads and writes Kubernetes Secrets from inside a pod,
// with the pod's service account: the API server address from
// $KUBERNETES_SERVICE_HOST and $KUBERNETES_SERVICE_PORT, and the token, CA
// bundle and namespace kubelet mounts at
// /var/run/secrets/kubernetes.io/serviceaccount (what client-go's
// rest.InClusterConfig reads).
//
// It is the one piece of the Kubernetes API `tandem keygen
// --kubernetes-secret` needs (get, create, update one Secret), written
// against the API's published JSON (core/v1 Secret, meta/v1 Status) with
// net/http, so the tandem binary does not carry client-go.
//
//	c, err := kubesecret.InCluster(kubesecret.ServiceAccountDir)
//	s, err := c.Get(ctx, "tandem-curve")        // errors.Is(err, kubesecret.ErrNotFound)
//	_, err = c.Create(ctx, &kubesecret.Secret{…}) // errors.Is(err, kubesecret.ErrConflict)
package kubesecret
