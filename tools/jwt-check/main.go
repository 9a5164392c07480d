// Command jwt-check evaluates HTTP requests against an Envoy jwt_authn filter configuration the
// way the filter's documented semantics say, with a maintained JOSE library (go-jose) doing the
// token work: signature against the provider's key set, issuer, audiences, expiry and not-before.
// The control plane has no Envoy binary to run; this lets its tests check that the configuration
// it generates accepts and rejects the tokens a user would expect.
//
// Input (stdin, JSON):
//
//	{"config": <JwtAuthentication as protojson>, "requests": [{"name": "...", "headers": {"authorization": "Bearer ..."}, "query": {"access_token": "..."}}]}
//
// With "rbac": [{"name": "...", "config": <RBAC HTTP filter as protojson>}, ...] (the RBAC filters
// that follow jwt_authn in the chain, in their order) a request that passes jwt_authn is then
// evaluated by those filters (rbac.go), seeing the verified payload where jwt_authn writes it
// (dynamic metadata envoy.filters.http.jwt_authn / payload_in_metadata) and the request's method,
// path, host, peer principal, source IP and destination port given in the request:
//
//	{"name": "...", "method": "GET", "path": "/", "principal": "spiffe://...", "source_ip": "10.0.0.1", "destination_port": 8080}
//
// Output (stdout, JSON): {"<name>": {"status": 200, 401 or 403, "provider": "...", "reason": "...", "payload": {...}}}.
//
// Supported: providers with issuer, audiences, local_jwks.inline_string, from_headers,
// from_params, payload_in_metadata, normalize_payload_in_metadata.space_delimited_claims; rules
// matching prefix "/" whose requirement is a provider_name, or requires_any of provider_name and
// allow_missing entries. Anything else is an error (exit 2), never a guess.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

type header struct {
	Name        string `json:"name"`
	ValuePrefix string `json:"value_prefix"`
}

type provider struct {
	Issuer      string   `json:"issuer"`
	Audiences   []string `json:"audiences"`
	FromHeaders []header `json:"from_headers"`
	FromParams  []string `json:"from_params"`
	LocalJwks   *struct {
		InlineString string `json:"inline_string"`
	} `json:"local_jwks"`
	RemoteJwks        json.RawMessage `json:"remote_jwks"`
	PayloadInMetadata string          `json:"payload_in_metadata"`
	Normalize         *struct {
		SpaceDelimitedClaims []string `json:"space_delimited_claims"`
	} `json:"normalize_payload_in_metadata"`
}

type requirement struct {
	ProviderName string          `json:"provider_name"`
	AllowMissing json.RawMessage `json:"allow_missing"`
	RequiresAny  *struct {
		Requirements []requirement `json:"requirements"`
	} `json:"requires_any"`
}

type config struct {
	Providers map[string]provider `json:"providers"`
	Rules     []struct {
		Match struct {
			Prefix string `json:"prefix"`
		} `json:"match"`
		Requires requirement `json:"requires"`
	} `json:"rules"`
}

type request struct {
	Name  string            `json:"name"`
	Query map[string]string `json:"query"`
	rbacRequest
}

type result struct {
	Status   int            `json:"status"`
	Provider string         `json:"provider,omitempty"`
	Reason   string         `json:"reason,omitempty"`
	Payload  map[string]any `json:"payload,omitempty"`
}

var algorithms = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512, jose.ES256, jose.ES384, jose.ES512, jose.EdDSA}

func main() {
	var in struct {
		Config   config          `json:"config"`
		Rbac     json.RawMessage `json:"rbac"`
		Requests []request       `json:"requests"`
	}
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		fail("reading input: %v", err)
	}
	if len(in.Config.Rules) != 1 || in.Config.Rules[0].Match.Prefix != "/" {
		fail("only one rule matching prefix \"/\" is supported")
	}
	names, allowMissing := alternatives(in.Config.Rules[0].Requires)
	filters := decodeRbacFilters(in.Rbac)
	out := map[string]result{}
	for _, r := range in.Requests {
		res := evaluate(in.Config, names, allowMissing, r)
		if res.Status == 200 && filters != nil {
			r.metadata = map[string]any{}
			if p := in.Config.Providers[res.Provider]; res.Payload != nil && p.PayloadInMetadata != "" {
				r.metadata[p.PayloadInMetadata] = normalized(p, res.Payload)
			}
			decision := evaluateRbac(filters, &r.rbacRequest)
			decision.Provider, decision.Payload = res.Provider, res.Payload
			res = decision
		}
		out[r.Name] = res
	}
	_ = json.NewEncoder(os.Stdout).Encode(out)
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "jwt-check: "+format+"\n", args...)
	os.Exit(2)
}

// alternatives flattens the supported requirement shapes into provider names (any of them) and
// whether a request without a token is let through.
func alternatives(r requirement) ([]string, bool) {
	if r.ProviderName != "" {
		return []string{r.ProviderName}, false
	}
	if r.RequiresAny == nil {
		fail("unsupported requirement")
	}
	var names []string
	missing := false
	for _, x := range r.RequiresAny.Requirements {
		switch {
		case x.ProviderName != "":
			names = append(names, x.ProviderName)
		case x.AllowMissing != nil:
			missing = true
		default:
			fail("unsupported requirement inside requires_any")
		}
	}
	return names, missing
}

func evaluate(c config, names []string, allowMissing bool, r request) result {
	found := false
	var reasons []string
	for _, name := range names {
		p, ok := c.Providers[name]
		if !ok {
			fail("requirement names unknown provider %q", name)
		}
		token, present := extract(p, r)
		if !present {
			continue
		}
		found = true
		payload, err := verify(p, token)
		if err == nil {
			return result{Status: 200, Provider: name, Payload: payload}
		}
		reasons = append(reasons, fmt.Sprintf("%s: %v", name, err))
	}
	if !found {
		if allowMissing {
			return result{Status: 200, Reason: "no token"}
		}
		return result{Status: 401, Reason: "Jwt is missing"}
	}
	return result{Status: 401, Reason: strings.Join(reasons, "; ")}
}

// normalized is the payload as jwt_authn writes it to metadata: the space-delimited claims listed
// (a string) split into lists.
func normalized(p provider, payload map[string]any) map[string]any {
	out := make(map[string]any, len(payload))
	for k, v := range payload {
		out[k] = v
	}
	if p.Normalize == nil {
		return out
	}
	for _, c := range p.Normalize.SpaceDelimitedClaims {
		if s, ok := out[c].(string); ok {
			parts := []any{}
			for _, f := range strings.Fields(s) {
				parts = append(parts, f)
			}
			out[c] = parts
		}
	}
	return out
}

func extract(p provider, r request) (string, bool) {
	hdrs, params := p.FromHeaders, p.FromParams
	if len(hdrs) == 0 && len(params) == 0 {
		hdrs, params = []header{{Name: "authorization", ValuePrefix: "Bearer "}}, []string{"access_token"}
	}
	for _, h := range hdrs {
		for k, v := range r.Headers {
			if strings.EqualFold(k, h.Name) && strings.HasPrefix(v, h.ValuePrefix) {
				return strings.TrimPrefix(v, h.ValuePrefix), true
			}
		}
	}
	for _, q := range params {
		if v, ok := r.Query[q]; ok {
			return v, true
		}
	}
	return "", false
}

func verify(p provider, token string) (map[string]any, error) {
	if p.LocalJwks == nil {
		return nil, errors.New("provider has no local_jwks (remote key sets are not evaluated here)")
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal([]byte(p.LocalJwks.InlineString), &set); err != nil {
		return nil, fmt.Errorf("key set: %v", err)
	}
	parsed, err := jwt.ParseSigned(token, algorithms)
	if err != nil {
		return nil, fmt.Errorf("Jwt is not in the form of Header.Payload.Signature: %v", err)
	}
	keys := set.Keys
	if kid := parsed.Headers[0].KeyID; kid != "" {
		keys = set.Key(kid)
	}
	var claims jwt.Claims
	payload := map[string]any{}
	verified := false
	for _, k := range keys {
		if parsed.Claims(k.Key, &claims, &payload) == nil {
			verified = true
			break
		}
	}
	if !verified {
		return nil, errors.New("Jwt verification fails")
	}
	if p.Issuer != "" && claims.Issuer != p.Issuer {
		return nil, errors.New("Jwt issuer is not configured")
	}
	if len(p.Audiences) > 0 {
		ok := false
		for _, a := range p.Audiences {
			if claims.Audience.Contains(a) {
				ok = true
			}
		}
		if !ok {
			return nil, errors.New("Audiences in Jwt are not allowed")
		}
	}
	// Envoy's default clock skew is 60 s
	if err := claims.ValidateWithLeeway(jwt.Expected{Time: time.Now()}, 60*time.Second); err != nil {
		if errors.Is(err, jwt.ErrExpired) {
			return nil, errors.New("Jwt is expired")
		}
		return nil, fmt.Errorf("Jwt not yet valid: %v", err)
	}
	return payload, nil
}
