package k8sjob

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"sigs.k8s.io/yaml"
)

// YAML builds the objects and writes them as one YAML stream for `kubectl
// apply -f`: the ConfigMap first (the Job's pods mount it), then the Job.
func YAML(o Options) ([]byte, error) {
	job, cm, err := Build(o)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("# lockfault campaign " + job.Annotations["lockfault/campaign"] + ": " + fmt.Sprint(*job.Spec.Completions) +
		" shards as a Kubernetes Indexed Job (docs/CAMPAIGNS.md)\n")
	for _, obj := range []any{cm, job} {
		data, err := yaml.Marshal(obj)
		if err != nil {
			return nil, err
		}
		b.WriteString("---\n")
		b.Write(data)
	}
	return b.Bytes(), nil
}

// readText reads a file of at most ConfigMapLimit bytes.
func readText(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, ConfigMapLimit+1))
	if err != nil {
		return "", err
	}
	if len(data) > ConfigMapLimit {
		return "", fmt.Errorf("%s: larger than %d bytes (allowed: what a ConfigMap holds)", path, ConfigMapLimit)
	}
	return string(data), nil
}
