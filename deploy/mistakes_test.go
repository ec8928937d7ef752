package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRulesCatchMistakes alters a copy of deploy/k8s the way a change
// could go wrong and runs TestOverlays on it in a child process: each
// mistake must fail it, saying what is wrong.
func TestRulesCatchMistakes(t *testing.T) {
	if os.Getenv("K8S_DIR") != "" {
		t.Skip("a child run")
	}
	cases := []struct {
		name, file, old, new, says string
	}{
		{"a ClusterIP gRPC Service", "base/contacts.yaml", "  clusterIP: None\n", "", "must be headless"},
		{"a renamed variable", "overlays/development/messaging.yaml", "SWITCHBOARD_FILES_DIR", "SWITCHBOARD_FILE_DIR", "read by no code"},
		{"no startup probe", "base/billing.yaml", "          startupProbe:\n            grpc: {port: 9105}\n            periodSeconds: 2\n            failureThreshold: 90\n", "", "startup probe"},
		{"no HPA", "base/gateway.yaml", "kind: Deployment, name: gateway}", "kind: Deployment, name: gateway-v1}", "gateway: HorizontalPodAutoscalers"},
		{"a port the code does not listen on", "base/sales.yaml", "containerPort: 9109", "containerPort: 9110", "the code listens on 9109"},
		{"an unknown field", "base/partners.yaml", "  maxUnavailable: 1\n", "  maxUnavailable: 1\n  minAvailabel: 1\n", "unknown field"},
		{"a peer at the wrong port", "base/config.env", "SWITCHBOARD_SALES_ADDR=sales:9109", "SWITCHBOARD_SALES_ADDR=sales:9110", "the headless Service is sales:9109"},
		{"a peer address left out", "base/config.env", "SWITCHBOARD_WEBHOOKS_ADDR=webhooks:9107\n", "", "SWITCHBOARD_WEBHOOKS_ADDR"},
		{"replicas beside the HPA", "base/identity.yaml", "  revisionHistoryLimit: 5\n", "  replicas: 2\n  revisionHistoryLimit: 5\n", "replicas is the HPA's"},
		{"a latest image", "overlays/production/kustomization.yaml", `newName: registry.example.com/switchboard/webhooks, newTag: "1.0.0"`, `newName: registry.example.com/switchboard/webhooks, newTag: latest`, "pinned tag"},
		{"an undocumented Secret key", "base/connections.yaml", "key: secrets-key}", "key: sealing-key}", "docs/deploy.md must list the Secret key sealing-key"},
		{"a grace period too short", "base/messaging.yaml", "terminationGracePeriodSeconds: 30", "terminationGracePeriodSeconds: 10", "terminationGracePeriodSeconds must exceed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.CopyFS(dir, os.DirFS("k8s")))
			path := filepath.Join(dir, c.file)
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Contains(t, string(b), c.old, "the case no longer applies to %s", c.file)
			require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(b), c.old, c.new, 1)), 0o644))
			cmd := exec.Command(os.Args[0], "-test.run=^TestOverlays$", "-test.count=1")
			cmd.Env = append(os.Environ(), "K8S_DIR="+dir)
			out, err := cmd.CombinedOutput()
			require.Error(t, err, "TestOverlays passed with %s:\n%s", c.name, out)
			require.Contains(t, string(out), c.says)
		})
	}
}
