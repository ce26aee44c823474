package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"

	"github.com/labstack/echo/v4"
)

// Tenants. With more than one API key (--api-key-file), each key is a
// tenant: its session ids are scoped to it (another key's GET or DELETE
// of the id gets the same 404 as an unknown id, and a request naming it
// joins a different session), its prompts are cache-salted by it (no KV
// block is shared across tenants, so no timing side channel), and its
// stored responses are its own. With one key there is one tenant and
// nothing is scoped.

// apiKey is one accepted key, as its digest.
type apiKey struct {
	sum    [sha256.Size]byte
	tenant string // "" with a single key
}

// newKeys digests keys; tenants are named by a digest prefix ("t" + 12
// hex digits), never by the key.
func newKeys(keys []string) []apiKey {
	out := make([]apiKey, 0, len(keys))
	for _, k := range keys {
		sum := sha256.Sum256([]byte(k))
		ak := apiKey{sum: sum}
		if len(keys) > 1 {
			ak.tenant = "t" + hex.EncodeToString(sum[:6])
		}
		out = append(out, ak)
	}
	return out
}

// match finds the key whose digest is sum, comparing every key in
// constant time (neither which key matched nor a key's content or
// length leaks through timing).
func match(keys []apiKey, sum [sha256.Size]byte) (tenant string, ok bool) {
	for _, k := range keys {
		if subtle.ConstantTimeCompare(sum[:], k.sum[:]) == 1 {
			tenant, ok = k.tenant, true
		}
	}
	return tenant, ok
}

const ctxTenantKey = "tandem.tenant"

// tenantOf is the caller's tenant ("" without tenancy).
func tenantOf(c echo.Context) string {
	t, _ := c.Get(ctxTenantKey).(string)
	return t
}

// scopeSession is the id a session has in the engines: the tenant's own
// namespace ("t…:id"), or id itself without tenancy.
func scopeSession(tenant, id string) string {
	if tenant == "" || id == "" {
		return id
	}
	return tenant + ":" + id
}

// scopeSalt is the cache salt of a tenant's request: the tenant and the
// request's own salt, so that tenants never share KV blocks.
func scopeSalt(tenant, salt string) string {
	if tenant == "" {
		return salt
	}
	return tenant + "\x00" + salt
}
