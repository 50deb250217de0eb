package gen

import (
	"go/token"
	"strings"
	"unicode"
)

var initialisms = map[string]string{
	"id": "ID", "ids": "IDs", "url": "URL", "uri": "URI", "api": "API", "json": "JSON", "utf8": "UTF8",
	"cpu": "CPU", "gpu": "GPU", "uuid": "UUID", "pk": "PK", "http": "HTTP", "ttl": "TTL", "nccl": "NCCL",
	"os": "OS", "abi": "ABI", "sha256": "SHA256", "ascii": "ASCII", "ip": "IP",
}

// camel turns snake_case, kebab-case, dotted or SCREAMING_CASE words into
// CamelCase with Go initialisms.
func camel(s string) string {
	words := strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	var b strings.Builder
	for _, w := range words {
		lw := strings.ToLower(w)
		if ini, ok := initialisms[lw]; ok {
			b.WriteString(ini)
			continue
		}
		// keep existing inner capitals of camelCase words (e.g. maxBytes)
		if w != strings.ToUpper(w) {
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
			continue
		}
		b.WriteString(strings.ToUpper(lw[:1]) + lw[1:])
	}
	out := b.String()
	if out == "" || unicode.IsDigit(rune(out[0])) {
		out = "V" + out
	}
	return out
}

func goFieldName(json string) string { return camel(json) }

// goConstSuffix is the suffix of an enum constant for value v.
func goConstSuffix(v string) string {
	s := camel(v)
	if strings.HasPrefix(s, "V") && len(v) > 0 && unicode.IsDigit(rune(v[0])) {
		return s[1:]
	}
	return s
}

// goDefName drops a leading Go package name from a definition name:
// #LifecycleSnapshot in package lifecycle becomes Snapshot.
func goDefName(def, gopkg string) string {
	p := camel(gopkg)
	if strings.HasPrefix(def, p) && len(def) > len(p) && unicode.IsUpper(rune(def[len(p)])) {
		return def[len(p):]
	}
	return camel(def)
}

func goValueName(path string) string { return camel(path) }

func isGoIdent(s string) bool {
	if s == "" || token.IsKeyword(s) {
		return false
	}
	for i, r := range s {
		if !(r >= 'a' && r <= 'z' || r == '_' || (i > 0 && r >= '0' && r <= '9')) {
			return false
		}
	}
	return true
}
