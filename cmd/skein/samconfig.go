package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// samStack reads the stack name and region that sam deploy uses in the
// config environment env ("default", "prod", …) from a samconfig.toml:
// the [env.deploy.parameters] table, else [env.global.parameters]. It
// reads only those tables' plain string keys, which is what sam writes.
func samStack(path, env string) (stack, region string, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", "", fmt.Errorf("-sam-env: %w", err)
	}
	tables := map[string]map[string]string{}
	var cur map[string]string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			cur = map[string]string{}
			tables[strings.TrimSpace(line[1:len(line)-1])] = cur
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || cur == nil {
			continue
		}
		// A quoted string, perhaps followed by a comment.
		if q, err := strconv.QuotedPrefix(strings.TrimSpace(v)); err == nil {
			if s, err := strconv.Unquote(q); err == nil {
				cur[strings.TrimSpace(k)] = s
			}
		}
	}
	for _, t := range []string{env + ".deploy.parameters", env + ".global.parameters"} {
		if stack == "" {
			stack = tables[t]["stack_name"]
		}
		if region == "" {
			region = tables[t]["region"]
		}
	}
	if stack == "" {
		return "", "", fmt.Errorf("-sam-env: %s names no stack_name for the config environment %q", path, env)
	}
	return stack, region, nil
}
