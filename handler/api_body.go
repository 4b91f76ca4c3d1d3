package handler

import (
	"encoding/json"
	"maps"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// isJSONMediaType reports whether a Content-Type is application/json (with
// any parameters, such as charset=utf-8), the only type the OpenAPI
// document gives the API's request bodies.
func isJSONMediaType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

func unsupportedMediaType(detail string) *problem {
	return &problem{Type: problemType("unsupported-media-type"), Title: "Unsupported Media Type",
		Status: http.StatusUnsupportedMediaType, Code: "UNSUPPORTED_MEDIA_TYPE", Detail: detail}
}

// checkJSONText says why body cannot be read as JSON text without change,
// or "": it must be valid UTF-8, and its \u escapes must not name a lone
// surrogate. encoding/json turns both into U+FFFD, so that distinct
// idempotency keys (or tokens) would become one.
func checkJSONText(body []byte) string {
	if !utf8.Valid(body) {
		return "the body is not valid UTF-8"
	}
	for i := 0; i < len(body); i++ {
		if body[i] != '\\' {
			continue
		}
		if i+1 < len(body) && body[i+1] != 'u' {
			i++ // an escape of one character, \\ among them
			continue
		}
		r, ok := escapedUnit(body, i)
		if !ok {
			continue // malformed: json.Decoder says so
		}
		switch {
		case utf16.IsSurrogate(r) && r < 0xdc00: // high: a low one must follow
			if lo, ok := escapedUnit(body, i+6); ok && lo >= 0xdc00 && lo <= 0xdfff {
				i += 11
				continue
			}
			return "the body has a lone surrogate escape (\\u" + string(body[i+2:i+6]) + "): it is not text"
		case utf16.IsSurrogate(r):
			return "the body has a lone surrogate escape (\\u" + string(body[i+2:i+6]) + "): it is not text"
		}
		i += 5
	}
	return ""
}

// escapedUnit reads the UTF-16 unit of the \uXXXX escape at body[i:].
func escapedUnit(body []byte, i int) (rune, bool) {
	if i+6 > len(body) || body[i] != '\\' || body[i+1] != 'u' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(body[i+2:i+6]), 16, 16)
	return rune(n), err == nil
}

// unknownMember returns the first member of the JSON object body whose name
// is not exactly one of dst's (a pointer to a struct) JSON names, or "".
// encoding/json matches names without regard to case, so that {"INPUT":…}
// would be taken for {"input":…}.
func unknownMember(body []byte, dst any) string {
	var members map[string]json.RawMessage
	if json.Unmarshal(body, &members) != nil {
		return "" // not an object: the decoder says so
	}
	known := map[string]bool{}
	t := reflect.TypeOf(dst).Elem()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		known[name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(members)) {
		if !known[name] {
			return name
		}
	}
	return ""
}
