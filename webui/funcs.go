package webui

import (
	"html/template"
	"time"
)

// funcs are the templates' helpers. None of them returns template.HTML:
// every string reaches the page through html/template's escaping.
func funcs() template.FuncMap {
	return template.FuncMap{
		"at": func(t time.Time) string {
			if t.IsZero() {
				return ""
			}
			return t.Local().Format("2006-01-02 15:04:05.000")
		},
		"short": func(t time.Time) string {
			if t.IsZero() {
				return ""
			}
			return t.Local().Format("2006-01-02 15:04:05")
		},
		"statusClass": statusClass,
	}
}
