package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"switchboard.dev/pkg/devstack"
)

// overlays are the shapes a platform team deploys. K8S_DIR replaces the
// folder k8s (TestRulesCatchMistakes checks altered copies).
var overlays = []string{k8sDir() + "/overlays/development", k8sDir() + "/overlays/production"}

func k8sDir() string {
	if d := os.Getenv("K8S_DIR"); d != "" {
		return d
	}
	return "k8s"
}

// decoder decodes strictly: an unknown or repeated field is an error, as
// `kubectl apply --validate=strict` would refuse it.
func decoder(t testing.TB) runtime.Decoder {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, policyv1.AddToScheme, autoscalingv2.AddToScheme,
		networkingv1.AddToScheme, monitoringv1.AddToScheme,
	} {
		require.NoError(t, add(scheme))
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}

// objects are one overlay's build, decoded.
type objects struct {
	deployments  []*appsv1.Deployment
	statefulSets []*appsv1.StatefulSet
	services     []*corev1.Service
	configMaps   []*corev1.ConfigMap
	secrets      []*corev1.Secret
	pdbs         []*policyv1.PodDisruptionBudget
	hpas         []*autoscalingv2.HorizontalPodAutoscaler
	policies     []*networkingv1.NetworkPolicy
	monitors     []*monitoringv1.ServiceMonitor
	namespaces   []*corev1.Namespace
}

// build runs kustomize on an overlay, as `kubectl apply -k` would.
func build(t testing.TB, dir string) objects {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	require.NoError(t, err, "kustomize build %s", dir)
	dec := decoder(t)
	var o objects
	for _, r := range m.Resources() {
		y, err := r.AsYAML()
		require.NoError(t, err)
		obj, err := decodeStrict(dec, y)
		require.NoError(t, err, "%s %s in %s", r.GetKind(), r.GetName(), dir)
		switch v := obj.(type) {
		case *appsv1.Deployment:
			o.deployments = append(o.deployments, v)
		case *appsv1.StatefulSet:
			o.statefulSets = append(o.statefulSets, v)
		case *corev1.Service:
			o.services = append(o.services, v)
		case *corev1.ConfigMap:
			o.configMaps = append(o.configMaps, v)
		case *corev1.Secret:
			o.secrets = append(o.secrets, v)
		case *policyv1.PodDisruptionBudget:
			o.pdbs = append(o.pdbs, v)
		case *autoscalingv2.HorizontalPodAutoscaler:
			o.hpas = append(o.hpas, v)
		case *networkingv1.NetworkPolicy:
			o.policies = append(o.policies, v)
		case *monitoringv1.ServiceMonitor:
			o.monitors = append(o.monitors, v)
		case *corev1.Namespace:
			o.namespaces = append(o.namespaces, v)
		default:
			t.Fatalf("%s: %T is not a kind the rules know", dir, obj)
		}
	}
	return o
}

func decodeStrict(dec runtime.Decoder, y []byte) (runtime.Object, error) {
	obj, _, err := dec.Decode(y, nil, nil)
	return obj, err
}

// TestStrictDecoding: the decoder refuses what the API server would (so
// the overlays' passing means something).
func TestStrictDecoding(t *testing.T) {
	dec := decoder(t)
	good := "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: x}\nspec: {maxUnavailable: 1}\n"
	_, err := decodeStrict(dec, []byte(good))
	require.NoError(t, err)
	for _, bad := range []string{
		// A misspelt field.
		"apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: x}\nspec: {maxUnavailabel: 1}\n",
		// A field at the wrong level.
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {template: {spec: {containers: [{name: a, image: b, minReadySeconds: 2}]}}}\n",
		// A kind not registered.
		"apiVersion: v1\nkind: Pod2\nmetadata: {name: x}\n",
	} {
		_, err := decodeStrict(dec, []byte(bad))
		require.Error(t, err, bad)
	}
}

// TestOverlays builds each overlay and holds every rule on what it makes.
func TestOverlays(t *testing.T) {
	procs := processes(t)
	for _, dir := range overlays {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			checkObjects(t, build(t, dir), procs, filepath.Base(dir))
		})
	}
}

func checkObjects(t *testing.T, o objects, procs map[string]process, shape string) {
	// Every process of the platform has its Deployment, and nothing else does.
	var names []string
	for _, d := range o.deployments {
		names = append(names, d.Name)
	}
	var want []string
	for _, s := range devstack.Services {
		want = append(want, s.Name)
	}
	want = append(want, "gateway")
	require.ElementsMatch(t, want, names, "Deployments")

	cm := sharedConfig(t, o)
	for _, d := range o.deployments {
		t.Run(d.Name, func(t *testing.T) {
			checkDeployment(t, o, d, procs[d.Name], cm)
		})
	}
	checkServices(t, o, procs, cm)
	checkSecrets(t, o)
	for _, s := range o.statefulSets {
		for _, c := range s.Spec.Template.Spec.Containers {
			require.NotNil(t, c.ReadinessProbe, "%s: readiness probe", s.Name)
			require.NotNil(t, c.LivenessProbe, "%s: liveness probe", s.Name)
			require.False(t, c.Resources.Requests.Cpu().IsZero(), "%s: CPU request", s.Name)
			require.False(t, c.Resources.Limits.Memory().IsZero(), "%s: memory limit", s.Name)
		}
	}
	if len(o.policies) > 0 {
		checkPolicies(t, o)
	}
	if len(o.monitors) > 0 {
		checkMonitors(t, o)
	}
	if shape == "production" {
		require.NotEmpty(t, o.monitors, "production scrapes /metrics")
		require.NotEmpty(t, o.policies, "production has network policies")
		require.Equal(t, "0", cm.Data["SWITCHBOARD_SANDBOX"], "production: test mode off")
		require.Empty(t, o.secrets, "production's Secret is the platform team's, not in the manifests")
	}
}

// sharedConfig is the ConfigMap every process takes (envFrom).
func sharedConfig(t *testing.T, o objects) *corev1.ConfigMap {
	t.Helper()
	for _, c := range o.configMaps {
		if strings.HasPrefix(c.Name, "switchboard-") || c.Name == "switchboard" {
			return c
		}
	}
	t.Fatal("no ConfigMap switchboard")
	return nil
}

func checkDeployment(t *testing.T, o objects, d *appsv1.Deployment, p process, cm *corev1.ConfigMap) {
	require.NotEmpty(t, p.Name, "%s is no process of the code", d.Name)
	spec := d.Spec.Template.Spec
	require.Len(t, spec.Containers, 1)
	c := spec.Containers[0]
	require.Equal(t, d.Name, c.Name)

	// The image: this process's, pinned.
	image, tag, ok := strings.Cut(c.Image, ":")
	require.True(t, ok && tag != "" && tag != "latest", "%s: image %q must have a pinned tag", d.Name, c.Image)
	require.True(t, image == "switchboard/"+d.Name || strings.HasSuffix(image, "/switchboard/"+d.Name),
		"%s: image %q is not switchboard/%s (deploy/docker/Dockerfile's SERVICE=%s)", d.Name, c.Image, d.Name, d.Name)
	main := filepath.Join(root, "services", d.Name, "cmd", d.Name)
	if d.Name == "gateway" {
		main = filepath.Join(root, "gateway", "cmd", "gateway")
	}
	_, err := os.Stat(main)
	require.NoError(t, err, "the Dockerfile builds %s", main)

	// The HPA owns the count; new pods are seen before old ones go.
	require.Nil(t, d.Spec.Replicas, "%s: replicas is the HPA's", d.Name)
	require.GreaterOrEqual(t, d.Spec.MinReadySeconds, int32(1), "%s: minReadySeconds", d.Name)
	ru := d.Spec.Strategy.RollingUpdate
	require.NotNil(t, ru, "%s: rolling update", d.Name)
	require.Equal(t, 0, ru.MaxUnavailable.IntValue(), "%s: a rollout never goes below the count", d.Name)

	// Probes, on the process's own port.
	require.NotNil(t, c.StartupProbe, "%s: startup probe", d.Name)
	require.NotNil(t, c.ReadinessProbe, "%s: readiness probe", d.Name)
	require.NotNil(t, c.LivenessProbe, "%s: liveness probe", d.Name)
	listen := portNamed(t, c, map[bool]string{true: "http", false: "grpc"}[d.Name == "gateway"])
	require.Equal(t, int32(p.Port), listen.ContainerPort, "%s: the code listens on %d", d.Name, p.Port)
	for _, pr := range []*corev1.Probe{c.StartupProbe, c.ReadinessProbe, c.LivenessProbe} {
		switch {
		case pr.GRPC != nil:
			require.Equal(t, listen.ContainerPort, pr.GRPC.Port, "%s: gRPC probe port", d.Name)
		case pr.HTTPGet != nil:
			require.True(t, pr.HTTPGet.Port == intstr.FromString(listen.Name) || pr.HTTPGet.Port == intstr.FromInt32(listen.ContainerPort),
				"%s: HTTP probe port", d.Name)
			require.Contains(t, []string{"/healthz", "/readyz"}, pr.HTTPGet.Path, "%s: the gateway's health paths", d.Name)
		default:
			t.Fatalf("%s: a probe neither gRPC nor HTTP", d.Name)
		}
	}

	// Resources: CPU and memory requested, memory bounded.
	require.False(t, c.Resources.Requests.Cpu().IsZero(), "%s: CPU request", d.Name)
	require.False(t, c.Resources.Requests.Memory().IsZero(), "%s: memory request", d.Name)
	require.False(t, c.Resources.Limits.Memory().IsZero(), "%s: memory limit", d.Name)

	// Shutdown: the preStop pause and the process's own grace period fit
	// in the pod's.
	require.NotNil(t, c.Lifecycle, "%s: preStop", d.Name)
	require.NotNil(t, c.Lifecycle.PreStop, "%s: preStop", d.Name)
	require.NotNil(t, c.Lifecycle.PreStop.Sleep, "%s: preStop sleep", d.Name)
	grace, err := time.ParseDuration(cmOr(cm, "SWITCHBOARD_SHUTDOWN_TIMEOUT", p.Vars["SWITCHBOARD_SHUTDOWN_TIMEOUT"].Default))
	require.NoError(t, err)
	require.NotNil(t, spec.TerminationGracePeriodSeconds)
	require.Greater(t, time.Duration(*spec.TerminationGracePeriodSeconds)*time.Second,
		time.Duration(c.Lifecycle.PreStop.Sleep.Seconds)*time.Second+grace,
		"%s: terminationGracePeriodSeconds must exceed preStop plus SWITCHBOARD_SHUTDOWN_TIMEOUT", d.Name)

	// Hardening.
	require.NotNil(t, c.SecurityContext)
	require.True(t, c.SecurityContext.ReadOnlyRootFilesystem != nil && *c.SecurityContext.ReadOnlyRootFilesystem, "%s: read-only root", d.Name)
	require.True(t, spec.SecurityContext != nil && spec.SecurityContext.RunAsNonRoot != nil && *spec.SecurityContext.RunAsNonRoot, "%s: non-root", d.Name)

	// A PodDisruptionBudget and an HPA of its own.
	pods := labels.Set(d.Spec.Template.Labels)
	pdbs := 0
	for _, b := range o.pdbs {
		if selects(t, b.Spec.Selector, pods) {
			pdbs++
			require.NotNil(t, b.Spec.MaxUnavailable, "%s: the PDB allows one pod down (a drain never blocks)", d.Name)
		}
	}
	require.Equal(t, 1, pdbs, "%s: PodDisruptionBudgets", d.Name)
	hpas := 0
	for _, h := range o.hpas {
		if h.Spec.ScaleTargetRef.Kind == "Deployment" && h.Spec.ScaleTargetRef.Name == d.Name {
			hpas++
			require.NotNil(t, h.Spec.MinReplicas)
			require.GreaterOrEqual(t, h.Spec.MaxReplicas, *h.Spec.MinReplicas, "%s: HPA bounds", d.Name)
			require.NotEmpty(t, h.Spec.Metrics, "%s: HPA metrics", d.Name)
		}
	}
	require.Equal(t, 1, hpas, "%s: HorizontalPodAutoscalers", d.Name)

	checkEnv(t, o, d, c, p, cm)
}

func cmOr(cm *corev1.ConfigMap, key, def string) string {
	if v, ok := cm.Data[key]; ok {
		return v
	}
	return def
}

func portNamed(t *testing.T, c corev1.Container, name string) corev1.ContainerPort {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("%s: no container port %q", c.Name, name)
	return corev1.ContainerPort{}
}

func selects(t *testing.T, sel *metav1.LabelSelector, set labels.Set) bool {
	t.Helper()
	if sel == nil {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	require.NoError(t, err)
	return !s.Empty() && s.Matches(set)
}

// checkEnv: every variable the pod gets is one its code reads, every one it
// must have (required, or a loopback default) it gets, and the listen
// addresses match the container's ports.
func checkEnv(t *testing.T, o objects, d *appsv1.Deployment, c corev1.Container, p process, cm *corev1.ConfigMap) {
	given := map[string]string{}
	for _, ef := range c.EnvFrom {
		require.NotNil(t, ef.ConfigMapRef, "%s: envFrom a ConfigMap only", d.Name)
		require.Equal(t, cm.Name, ef.ConfigMapRef.Name, "%s: envFrom the shared ConfigMap", d.Name)
		for k, v := range cm.Data {
			given[k] = v
		}
	}
	for _, e := range c.Env {
		require.True(t, p.reads(e.Name), "%s: %s is read by no code of %s (renamed?)", d.Name, e.Name, d.Name)
		given[e.Name] = e.Value
		if e.ValueFrom != nil {
			given[e.Name] = "(from " + e.ValueFrom.String() + ")"
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
				require.Equal(t, cm.Name, r.Name, "%s: %s", d.Name, e.Name)
				require.Contains(t, cm.Data, r.Key, "%s: %s", d.Name, e.Name)
			}
		}
	}
	for _, v := range p.Vars {
		if v.mustSet() {
			require.NotEmpty(t, given[v.Name], "%s reads %s (default %q), which a pod must set", d.Name, v.Name, v.Default)
		}
	}
	listen := given[p.ListenEnv]
	require.Equal(t, fmt.Sprintf("0.0.0.0:%d", p.Port), listen, "%s: %s", d.Name, p.ListenEnv)
	metrics := given["SWITCHBOARD_METRICS_ADDR"]
	require.NotEmpty(t, metrics, "%s: /metrics must listen", d.Name)
	require.Equal(t, int32(portOf(t, metrics)), portNamed(t, c, "metrics").ContainerPort, "%s: metrics port", d.Name)
}

// checkServices: each service is reached through a headless Service of its
// name on its port, as the addresses in the ConfigMap say; every gRPC
// Service is headless; every Service selects pods.
func checkServices(t *testing.T, o objects, procs map[string]process, cm *corev1.ConfigMap) {
	byName := map[string]*corev1.Service{}
	for _, s := range o.services {
		byName[s.Name] = s
		sel := labels.Set(s.Spec.Selector)
		require.NotEmpty(t, sel, "Service %s selects no pods", s.Name)
		found := false
		for _, d := range o.deployments {
			found = found || labels.SelectorFromSet(sel).Matches(labels.Set(d.Spec.Template.Labels))
		}
		for _, st := range o.statefulSets {
			found = found || labels.SelectorFromSet(sel).Matches(labels.Set(st.Spec.Template.Labels))
		}
		require.True(t, found, "Service %s selects no workload's pods", s.Name)
		for _, p := range s.Spec.Ports {
			if p.Name == "grpc" || (p.AppProtocol != nil && *p.AppProtocol == "grpc") {
				require.Equal(t, corev1.ClusterIPNone, s.Spec.ClusterIP,
					"Service %s carries gRPC: it must be headless (clusterIP: None) or clients send every call to one pod", s.Name)
			}
		}
	}
	for _, svc := range devstack.Services {
		s := byName[svc.Name]
		require.NotNil(t, s, "no Service %s", svc.Name)
		var grpc *corev1.ServicePort
		for i := range s.Spec.Ports {
			if s.Spec.Ports[i].Name == "grpc" {
				grpc = &s.Spec.Ports[i]
			}
		}
		require.NotNil(t, grpc, "Service %s: port grpc", svc.Name)
		require.Equal(t, int32(svc.Port), grpc.Port, "Service %s: the list's port", svc.Name)
		require.Equal(t, int32(procs[svc.Name].Port), grpc.Port, "Service %s: the code's port", svc.Name)
		require.Equal(t, corev1.ClusterIPNone, s.Spec.ClusterIP, "Service %s must be headless", svc.Name)
		// Every process reaches it at that name and port.
		addr := cm.Data[svc.AddrEnv]
		want := fmt.Sprintf("%s:%d", svc.Name, svc.Port)
		require.True(t, addr == want || addr == "dns:///"+want,
			"%s=%q: the headless Service is %s", svc.AddrEnv, addr, want)
	}
	// Every key of the shared ConfigMap is read by some process.
	for k := range cm.Data {
		read := false
		for _, p := range procs {
			read = read || p.reads(k)
		}
		require.True(t, read, "ConfigMap key %s is read by no process (renamed?)", k)
	}
}

// checkSecrets: where an overlay makes the Secret, it holds every key
// that a pod needs (not optional).
func checkSecrets(t *testing.T, o objects) {
	keys := map[string]bool{}
	for _, s := range o.secrets {
		for k := range s.Data {
			keys[k] = true
		}
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "deploy.md"))
	require.NoError(t, err)
	each := func(f func(c corev1.Container)) {
		for _, d := range o.deployments {
			for _, c := range d.Spec.Template.Spec.Containers {
				f(c)
			}
		}
	}
	each(func(c corev1.Container) {
		for _, e := range c.Env {
			if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				continue
			}
			r := e.ValueFrom.SecretKeyRef
			require.True(t, strings.Contains(string(doc), "`"+r.Key+"`"), "docs/deploy.md must list the Secret key %s", r.Key)
			if len(o.secrets) > 0 && (r.Optional == nil || !*r.Optional) {
				require.True(t, keys[r.Key], "%s: the Secret has no key %s", c.Name, r.Key)
			}
		}
	})
}

// checkPolicies: with network policies on, every port a Service exposes is
// allowed into its pods: the gateway's HTTP from anywhere, gRPC from the
// platform's pods, metrics from some namespace.
func checkPolicies(t *testing.T, o objects) {
	gateway := labels.Set{"app.kubernetes.io/name": "gateway", "app.kubernetes.io/part-of": "switchboard"}
	allowed := func(pods labels.Set, port string, from func(networkingv1.NetworkPolicyPeer) bool, anywhere bool) bool {
		for _, np := range o.policies {
			if !selects(t, &np.Spec.PodSelector, pods) {
				continue
			}
			for _, rule := range np.Spec.Ingress {
				portOK := len(rule.Ports) == 0
				for _, p := range rule.Ports {
					portOK = portOK || (p.Port != nil && p.Port.String() == port)
				}
				if !portOK {
					continue
				}
				if len(rule.From) == 0 {
					return true
				}
				if anywhere {
					continue
				}
				for _, peer := range rule.From {
					if from(peer) {
						return true
					}
				}
			}
		}
		return false
	}
	for _, d := range o.deployments {
		pods := labels.Set(d.Spec.Template.Labels)
		if d.Name == "gateway" {
			require.True(t, allowed(pods, "http", nil, true), "gateway: HTTP from anywhere")
		} else {
			require.True(t, allowed(pods, "grpc", func(p networkingv1.NetworkPolicyPeer) bool {
				return p.NamespaceSelector == nil && selects(t, p.PodSelector, gateway)
			}, false), "%s: gRPC from the gateway and the services", d.Name)
		}
		require.True(t, allowed(pods, "metrics", func(p networkingv1.NetworkPolicyPeer) bool {
			return p.NamespaceSelector != nil
		}, false), "%s: metrics from the monitoring namespace", d.Name)
	}
}

// checkMonitors: the ServiceMonitor scrapes the port metrics of every
// Service that has one.
func checkMonitors(t *testing.T, o objects) {
	for _, s := range o.services {
		if !slices.ContainsFunc(s.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == "metrics" }) {
			continue
		}
		found := false
		for _, m := range o.monitors {
			if selects(t, &m.Spec.Selector, labels.Set(s.Labels)) &&
				slices.ContainsFunc(m.Spec.Endpoints, func(e monitoringv1.Endpoint) bool { return e.Port == "metrics" }) {
				found = true
			}
		}
		require.True(t, found, "no ServiceMonitor scrapes Service %s's metrics", s.Name)
	}
}
