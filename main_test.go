package main

import (
	"slices"
	"testing"
)

func TestUnreadLogs(t *testing.T) {
	all := []string{"TF_LOG_PROVIDER", "TF_LOG_SDK", "TF_LOG_SDK_PROTO", "TF_LOG_SDK_FRAMEWORK"}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"nothing set: the CLI drops every log", nil, all},
		{"TF_LOG set: the CLI keeps them", map[string]string{"TF_LOG": "DEBUG"}, nil},
		{"TF_LOG_PROVIDER set: the CLI keeps them", map[string]string{"TF_LOG_PROVIDER": "TRACE"}, nil},
		{"a subsystem level the user chose is kept", map[string]string{"TF_LOG_SDK_PROTO": "trace"},
			[]string{"TF_LOG_PROVIDER", "TF_LOG_SDK", "TF_LOG_SDK_FRAMEWORK"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := unreadLogs(func(k string) string { return tc.env[k] })
			if !slices.Equal(got, tc.want) {
				t.Fatalf("unreadLogs = %v, want %v", got, tc.want)
			}
		})
	}
}
