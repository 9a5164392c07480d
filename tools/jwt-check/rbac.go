package main

// The RBAC HTTP filter's decision (envoy.extensions.filters.http.rbac.v3.RBAC, protojson as
// xds-validate -dump prints it) for one request after jwt_authn: a filter with action ALLOW lets a
// request through when some policy matches (and denies it otherwise), DENY refuses it when some
// policy matches, LOG never refuses. Shadow rules are never enforced. A policy matches when any of
// its permissions and any of its principals match.
//
// The matchers evaluated are the ones the control plane generates: any, and/or/not, authenticated
// principal names, header and path matchers, remote and direct remote IPs, destination ports and
// IPs, requested server names, and dynamic metadata matchers over the verified JWT payload (string,
// list one_of and presence). Any other matcher is an error (exit 2), never a guess.

import (
	"encoding/json"
	"fmt"
	"net"
	"regexp"
	"sort"
	"strings"
)

// rbacRequest is what the RBAC matchers see of a request.
type rbacRequest struct {
	Method    string            `json:"method"`
	Path      string            `json:"path"`
	Host      string            `json:"host"`
	Headers   map[string]string `json:"headers"`
	Principal string            `json:"principal"` // the peer certificate's URI SAN
	SourceIP  string            `json:"source_ip"`
	DestIP    string            `json:"destination_ip"`
	DestPort  int               `json:"destination_port"`
	SNI       string            `json:"sni"`
	// filled by jwt_authn: dynamic metadata of namespace envoy.filters.http.jwt_authn
	metadata map[string]any
}

type rbacFilter struct {
	Name   string         `json:"name"`
	Config map[string]any `json:"config"`
}

const jwtMetadataNamespace = "envoy.filters.http.jwt_authn"

// evaluateRbac runs the filters in order; the result is 200 or 403 with the filter and policy that decided.
func evaluateRbac(filters []rbacFilter, r *rbacRequest) result {
	for _, f := range filters {
		rules, ok := f.Config["rules"].(map[string]any)
		if !ok {
			continue // shadow rules only: never enforced
		}
		action, _ := rules["action"].(string)
		if action == "" {
			action = "ALLOW"
		}
		matched := matchingPolicy(rules, r)
		switch action {
		case "ALLOW":
			if matched == "" {
				return result{Status: 403, Reason: fmt.Sprintf("RBAC: access denied (%s: no policy matched)", f.Name)}
			}
		case "DENY":
			if matched != "" {
				return result{Status: 403, Reason: fmt.Sprintf("RBAC: access denied (%s: %s)", f.Name, matched)}
			}
		case "LOG":
		default:
			fail("filter %s: unsupported RBAC action %q", f.Name, action)
		}
	}
	return result{Status: 200}
}

// matchingPolicy is the name of the first policy (by name) that matches, or "".
func matchingPolicy(rules map[string]any, r *rbacRequest) string {
	policies, _ := rules["policies"].(map[string]any)
	names := make([]string, 0, len(policies))
	for n := range policies {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := obj(policies[n], "policy "+n)
		if anyOf(list(p["permissions"]), func(x any) bool { return permission(obj(x, "permission"), r) }) &&
			anyOf(list(p["principals"]), func(x any) bool { return principal(obj(x, "principal"), r) }) {
			return n
		}
	}
	return ""
}

func anyOf(l []any, f func(any) bool) bool {
	for _, x := range l {
		if f(x) {
			return true
		}
	}
	return false
}

func allOf(l []any, f func(any) bool) bool {
	for _, x := range l {
		if !f(x) {
			return false
		}
	}
	return true
}

func obj(v any, what string) map[string]any {
	m, ok := v.(map[string]any)
	if !ok {
		fail("%s: expected an object, got %T", what, v)
	}
	return m
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

// only returns the single key of a oneof object.
func only(m map[string]any, what string) (string, any) {
	if len(m) != 1 {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		fail("%s: expected exactly one field, got %v", what, keys)
	}
	for k, v := range m {
		return k, v
	}
	return "", nil
}

func principal(m map[string]any, r *rbacRequest) bool {
	k, v := only(m, "principal")
	switch k {
	case "any":
		return v == true
	case "and_ids":
		return allOf(list(obj(v, k)["ids"]), func(x any) bool { return principal(obj(x, k), r) })
	case "or_ids":
		return anyOf(list(obj(v, k)["ids"]), func(x any) bool { return principal(obj(x, k), r) })
	case "not_id":
		return !principal(obj(v, k), r)
	case "authenticated":
		pn, ok := obj(v, k)["principal_name"]
		if !ok {
			return r.Principal != "" // any authenticated peer
		}
		return r.Principal != "" && stringMatch(obj(pn, "principal_name"), r.Principal)
	case "header":
		return headerMatch(obj(v, k), r)
	case "url_path":
		return pathMatch(obj(v, k), r)
	case "direct_remote_ip", "remote_ip", "source_ip":
		return cidrMatch(obj(v, k), r.SourceIP)
	case "metadata":
		return metadataMatch(obj(v, k), r)
	}
	fail("unsupported principal matcher %q", k)
	return false
}

func permission(m map[string]any, r *rbacRequest) bool {
	k, v := only(m, "permission")
	switch k {
	case "any":
		return v == true
	case "and_rules":
		return allOf(list(obj(v, k)["rules"]), func(x any) bool { return permission(obj(x, k), r) })
	case "or_rules":
		return anyOf(list(obj(v, k)["rules"]), func(x any) bool { return permission(obj(x, k), r) })
	case "not_rule":
		return !permission(obj(v, k), r)
	case "header":
		return headerMatch(obj(v, k), r)
	case "url_path":
		return pathMatch(obj(v, k), r)
	case "destination_port":
		n, _ := v.(float64)
		return int(n) == r.DestPort
	case "destination_ip":
		return cidrMatch(obj(v, k), r.DestIP)
	case "requested_server_name":
		return stringMatch(obj(v, k), r.SNI)
	case "metadata":
		return metadataMatch(obj(v, k), r)
	}
	fail("unsupported permission matcher %q", k)
	return false
}

// stringMatch applies an envoy.type.matcher.v3.StringMatcher.
func stringMatch(m map[string]any, s string) bool {
	ic, _ := m["ignore_case"].(bool)
	var kind string
	var arg any
	for k, v := range m {
		if k != "ignore_case" {
			if kind != "" {
				fail("string matcher with both %s and %s", kind, k)
			}
			kind, arg = k, v
		}
	}
	norm := func(x string) string {
		if ic {
			return strings.ToLower(x)
		}
		return x
	}
	switch kind {
	case "exact":
		return norm(s) == norm(arg.(string))
	case "prefix":
		return strings.HasPrefix(norm(s), norm(arg.(string)))
	case "suffix":
		return strings.HasSuffix(norm(s), norm(arg.(string)))
	case "contains":
		return strings.Contains(norm(s), norm(arg.(string)))
	case "safe_regex":
		re, err := regexp.Compile(`^(?:` + obj(arg, kind)["regex"].(string) + `)$`)
		if err != nil {
			fail("regex: %v", err)
		}
		return re.MatchString(s)
	}
	fail("unsupported string matcher %q", kind)
	return false
}

func headerMatch(m map[string]any, r *rbacRequest) bool {
	name, _ := m["name"].(string)
	var value string
	var present bool
	switch strings.ToLower(name) {
	case ":method":
		value, present = r.Method, r.Method != ""
	case ":path":
		value, present = r.Path, r.Path != ""
	case ":authority", "host":
		value, present = r.Host, r.Host != ""
	default:
		for k, v := range r.Headers {
			if strings.EqualFold(k, name) {
				value, present = v, true
			}
		}
	}
	inverted, _ := m["invert_match"].(bool)
	var ok bool
	switch {
	case m["present_match"] != nil:
		ok = present == (m["present_match"] == true)
	case m["string_match"] != nil:
		ok = present && stringMatch(obj(m["string_match"], "string_match"), value)
	default:
		fail("unsupported header matcher %v", m)
	}
	return ok != inverted
}

func pathMatch(m map[string]any, r *rbacRequest) bool {
	p, ok := m["path"]
	if !ok {
		fail("unsupported path matcher %v", m)
	}
	path := r.Path
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	return stringMatch(obj(p, "path"), path)
}

func cidrMatch(m map[string]any, ip string) bool {
	addr := net.ParseIP(ip)
	if addr == nil {
		return false
	}
	prefix, _ := m["address_prefix"].(string)
	n, _ := m["prefix_len"].(float64)
	_, block, err := net.ParseCIDR(fmt.Sprintf("%s/%d", prefix, int(n)))
	if err != nil {
		fail("cidr %s/%v: %v", prefix, n, err)
	}
	return block.Contains(addr)
}

// metadataMatch applies an envoy.type.matcher.v3.MetadataMatcher to the request's dynamic metadata.
func metadataMatch(m map[string]any, r *rbacRequest) bool {
	if f, _ := m["filter"].(string); f != jwtMetadataNamespace {
		fail("metadata matcher of filter %q: only %s is known here", f, jwtMetadataNamespace)
	}
	var cur any = r.metadata
	found := true
	for _, seg := range list(m["path"]) {
		key, _ := obj(seg, "path segment")["key"].(string)
		s, ok := cur.(map[string]any)
		if !ok {
			found = false
			break
		}
		if cur, ok = s[key]; !ok {
			found = false
			break
		}
	}
	invert, _ := m["invert"].(bool)
	return valueMatch(obj(m["value"], "value"), cur, found) != invert
}

// valueMatch applies an envoy.type.matcher.v3.ValueMatcher.
func valueMatch(m map[string]any, v any, found bool) bool {
	k, arg := only(m, "value matcher")
	switch k {
	case "present_match":
		return found == (arg == true)
	case "string_match":
		s, ok := v.(string)
		return found && ok && stringMatch(obj(arg, k), s)
	case "list_match":
		inner := obj(obj(arg, k)["one_of"], "one_of")
		l, ok := v.([]any)
		return found && ok && anyOf(l, func(x any) bool { return valueMatch(inner, x, true) })
	}
	fail("unsupported value matcher %q", k)
	return false
}

// decodeRbacFilters reads the optional "rbac" input.
func decodeRbacFilters(raw json.RawMessage) []rbacFilter {
	if len(raw) == 0 {
		return nil
	}
	var out []rbacFilter
	if err := json.Unmarshal(raw, &out); err != nil {
		fail("rbac: %v", err)
	}
	return out
}
