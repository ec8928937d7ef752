package deploy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/devstack"
)

// root is the repository's top folder, from this module's.
const root = ".."

// envVar is one variable a process reads, as its config struct declares it.
type envVar struct {
	Name     string
	Default  string
	Required bool
}

// process is what a binary's code says about its configuration.
type process struct {
	Name string
	// Port is the port of its default listen address: gRPC for a
	// service, HTTP for the gateway.
	Port int
	// ListenEnv is the variable of that address.
	ListenEnv string
	Vars      map[string]envVar
	// SDK are variables a library it uses reads (no struct declares them).
	SDK map[string]bool
}

// reads says whether the process reads the variable.
func (p process) reads(name string) bool {
	if _, ok := p.Vars[name]; ok || p.SDK[name] {
		return true
	}
	// OpenTelemetry's SDK (every process, pkg/telemetry) and Go's runtime.
	return strings.HasPrefix(name, "OTEL_") || name == "GOGC" || name == "GOMEMLIMIT" || name == "GOMAXPROCS"
}

// mustSet says whether a cluster must give the process the variable: it is
// required, or its default is a loopback address (a peer, the public URL),
// which is no use in a pod.
func (v envVar) mustSet() bool {
	return v.Required || strings.Contains(v.Default, "127.0.0.1") || v.Name == "SWITCHBOARD_DATABASE_URL"
}

func parseFile(t testing.TB, path string) *ast.File {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, path), nil, parser.SkipObjectResolution)
	require.NoError(t, err)
	return f
}

// structVars reads the env tags of the struct type name in f, and of the
// struct types of its untagged fields declared in the same file.
func structVars(t testing.TB, f *ast.File, name string, out map[string]envVar) {
	t.Helper()
	st := findStruct(f, name)
	require.NotNil(t, st, "struct %s", name)
	for _, field := range st.Fields.List {
		tag := ""
		if field.Tag != nil {
			tag, _ = strconv.Unquote(field.Tag.Value)
		}
		env := reflect.StructTag(tag).Get("env")
		if env == "" {
			if id, ok := field.Type.(*ast.Ident); ok && findStruct(f, id.Name) != nil {
				structVars(t, f, id.Name, out)
			}
			continue
		}
		parts := strings.Split(env, ",")
		v := envVar{Name: parts[0], Default: reflect.StructTag(tag).Get("envDefault")}
		for _, o := range parts[1:] {
			v.Required = v.Required || o == "required"
		}
		out[v.Name] = v
	}
}

func findStruct(f *ast.File, name string) *ast.StructType {
	var st *ast.StructType
	ast.Inspect(f, func(n ast.Node) bool {
		if ts, ok := n.(*ast.TypeSpec); ok && ts.Name.Name == name {
			st, _ = ts.Type.(*ast.StructType)
		}
		return st == nil
	})
	return st
}

// constString is the value of the string constant name in f.
func constString(t testing.TB, f *ast.File, name string) string {
	t.Helper()
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if n.Name == name && i < len(vs.Values) {
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok {
						v, err := strconv.Unquote(lit.Value)
						require.NoError(t, err)
						return v
					}
				}
			}
		}
	}
	t.Fatalf("no string constant %s", name)
	return ""
}

// defaultAddr is the DefaultAddr of a service's Spec in its main.go.
func defaultAddr(t testing.TB, f *ast.File) string {
	t.Helper()
	addr := ""
	ast.Inspect(f, func(n ast.Node) bool {
		if kv, ok := n.(*ast.KeyValueExpr); ok {
			if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "DefaultAddr" {
				if lit, ok := kv.Value.(*ast.BasicLit); ok {
					addr, _ = strconv.Unquote(lit.Value)
				}
			}
		}
		return addr == ""
	})
	require.NotEmpty(t, addr, "no DefaultAddr")
	return addr
}

func portOf(t testing.TB, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	require.NoError(t, err, addr)
	n, err := strconv.Atoi(p)
	require.NoError(t, err, addr)
	return n
}

// processes reads every binary's configuration from its code: each
// service's settings struct and pkg/config's Service, the gateway's
// Config, and the listeners every process has (metrics, pprof).
func processes(t testing.TB) map[string]process {
	t.Helper()
	common := map[string]envVar{}
	for _, c := range []struct{ file, name string }{
		{"pkg/metrics/metrics.go", "AddrEnv"},
		{"pkg/server/pprof.go", "PprofAddrEnv"},
	} {
		n := constString(t, parseFile(t, c.file), c.name)
		common[n] = envVar{Name: n}
	}
	shared := map[string]envVar{}
	structVars(t, parseFile(t, "pkg/config/config.go"), "Service", shared)
	out := map[string]process{}
	for _, s := range devstack.Services {
		main := parseFile(t, filepath.Join("services", s.Name, "cmd", s.Name, "main.go"))
		p := process{Name: s.Name, Port: portOf(t, defaultAddr(t, main)), ListenEnv: "SWITCHBOARD_GRPC_ADDR",
			Vars: map[string]envVar{}, SDK: map[string]bool{}}
		for _, m := range []map[string]envVar{common, shared} {
			for k, v := range m {
				p.Vars[k] = v
			}
		}
		structVars(t, main, "settings", p.Vars)
		// minio-go reads the standard AWS credentials (messaging's files).
		gomod, err := os.ReadFile(filepath.Join(root, "services", s.Name, "go.mod"))
		require.NoError(t, err)
		if strings.Contains(string(gomod), "github.com/minio/minio-go/") {
			p.SDK["AWS_ACCESS_KEY_ID"], p.SDK["AWS_SECRET_ACCESS_KEY"], p.SDK["AWS_SESSION_TOKEN"] = true, true, true
		}
		out[s.Name] = p
	}
	g := process{Name: "gateway", ListenEnv: "SWITCHBOARD_HTTP_ADDR", Vars: map[string]envVar{}}
	for k, v := range common {
		g.Vars[k] = v
	}
	structVars(t, parseFile(t, "gateway/internal/gateway/gateway.go"), "Config", g.Vars)
	require.Contains(t, g.Vars, g.ListenEnv)
	g.Port = portOf(t, g.Vars[g.ListenEnv].Default)
	out["gateway"] = g
	return out
}

// TestProcessesFromCode: the reading of the code finds what it must (a
// reader that found nothing would let every manifest pass).
func TestProcessesFromCode(t *testing.T) {
	ps := processes(t)
	require.Len(t, ps, len(devstack.Services)+1)
	m := ps["messaging"]
	require.Equal(t, 9106, m.Port)
	require.True(t, m.reads("SWITCHBOARD_FILES_STORAGE"))
	require.True(t, m.reads("SWITCHBOARD_METRICS_ADDR"))
	require.True(t, m.reads("SWITCHBOARD_DATABASE_URL"))
	require.True(t, m.reads("AWS_ACCESS_KEY_ID"))
	require.False(t, m.reads("SWITCHBOARD_HTTP_ADDR"))
	require.True(t, m.Vars["SWITCHBOARD_INTERNAL_TOKEN"].mustSet())
	require.True(t, m.Vars["SWITCHBOARD_CONTACTS_ADDR"].mustSet())
	require.False(t, m.Vars["SWITCHBOARD_LOG_LEVEL"].mustSet())
	// Nested settings structs (billing's Robokassa).
	require.True(t, ps["billing"].reads("SWITCHBOARD_ROBOKASSA_PASSWORD1"))
	g := ps["gateway"]
	require.Equal(t, 8080, g.Port)
	require.True(t, g.reads("SWITCHBOARD_SALES_ADDR"))
	require.False(t, g.reads("SWITCHBOARD_DATABASE_URL"))
}
