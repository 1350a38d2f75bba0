package acctest

import (
	"io"
	"net/http"
	"strings"
	"testing"

	repo "helm.sh/helm/v4/pkg/repo/v1"
	"sigs.k8s.io/yaml"
)

func TestStartChartRepo(t *testing.T) {
	url := StartChartRepo(t, ChartsDir())
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("url %s", url)
	}
	resp, err := http.Get(url + "/index.yaml") //nolint:noctx // test
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var index repo.IndexFile
	if err := yaml.Unmarshal(body, &index); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"openebs":  {"4.4.0", "4.2.0", "4.1.3", "4.1.2", "4.1.1", "4.1.0", "4.0.1", "4.0.0"},
		"longhorn": {"1.12.1", "1.12.0", "1.11.3", "1.11.0", "1.10.2", "1.10.1", "1.10.0", "1.9.2", "1.9.1", "1.9.0", "1.8.2", "1.8.1", "1.8.0", "1.7.3", "1.7.2", "1.7.1", "1.7.0"},
	}
	for name, versions := range want {
		var got []string
		for _, cv := range index.Entries[name] {
			got = append(got, cv.Version)
			wantKube := ">=1.25.0-0"
			if strings.HasPrefix(cv.Version, "1.7.") {
				wantKube = ">=1.21.0-0"
			}
			if name == "longhorn" && (cv.KubeVersion != wantKube || cv.AppVersion != "v"+cv.Version) {
				t.Errorf("longhorn %s: kubeVersion %q appVersion %q", cv.Version, cv.KubeVersion, cv.AppVersion)
			}
			if len(cv.URLs) != 1 || !strings.HasPrefix(cv.URLs[0], url+"/") || cv.Digest == "" {
				t.Errorf("%s %s: urls %q digest %q", name, cv.Version, cv.URLs, cv.Digest)
			}
		}
		if strings.Join(got, ",") != strings.Join(versions, ",") {
			t.Errorf("%s versions %q, want %q", name, got, versions)
		}
	}
	if len(index.Entries) != len(want) {
		t.Errorf("subcharts must not be published on their own: entries %d", len(index.Entries))
	}

	resp2, err := http.Get(index.Entries["openebs"][0].URLs[0]) //nolint:noctx // test
	if err != nil {
		t.Fatal(err)
	}
	_ = resp2.Body.Close()
	if resp2.StatusCode != http.StatusOK {
		t.Fatalf("archive: %s", resp2.Status)
	}
}

func TestStartChartRepoBasicAuth(t *testing.T) {
	r := StartChartRepoWith(t, ChartsDir(), ChartRepoOptions{Username: "u", Password: "p"})
	resp, err := http.Get(r.URL + "/index.yaml") //nolint:noctx // test
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without credentials: %s", resp.Status)
	}
	req, _ := http.NewRequest(http.MethodGet, r.URL+"/index.yaml", nil) //nolint:noctx // test
	req.SetBasicAuth("u", "p")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("with credentials: %s", resp.Status)
	}
}
