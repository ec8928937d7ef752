package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/mod/modfile"
	"sigs.k8s.io/yaml"

	"switchboard.dev/pkg/devstack"
)

// The one list of services is pkg/devstack's Services. These tests check
// every other place that names the services against it, so that a service
// added there and forgotten elsewhere (or the reverse) fails `make test`,
// naming the place.

func readRoot(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	require.NoError(t, err)
	return b
}

func listNames() []string {
	var out []string
	for _, s := range devstack.Services {
		out = append(out, s.Name)
	}
	return out
}

// TestServiceFolders: the Makefile builds and tests one module per folder
// of services/ (make's SERVICES), and those are the list's.
func TestServiceFolders(t *testing.T) {
	mods, err := filepath.Glob(filepath.Join(root, "services", "*", "go.mod"))
	require.NoError(t, err)
	var folders []string
	for _, m := range mods {
		folders = append(folders, filepath.Base(filepath.Dir(m)))
	}
	require.ElementsMatch(t, listNames(), folders, "services/ folders vs pkg/devstack's Services")
	for _, s := range devstack.Services {
		_, err := os.Stat(filepath.Join(root, "services", s.Name, "cmd", s.Name, "main.go"))
		require.NoError(t, err, "make build and the Dockerfile build services/%[1]s/cmd/%[1]s", s.Name)
	}
	mk := string(readRoot(t, "Makefile"))
	require.Contains(t, mk, "$(wildcard services/*/go.mod)", "the Makefile reads the services' folders")
	require.Regexp(t, `(?m)^MODULES := .*\$\(addprefix services/,\$\(SERVICES\)\).* deploy$`, mk, "the Makefile tests every service and this module")
}

// TestGoWork: every service's module is in the workspace.
func TestGoWork(t *testing.T) {
	wf, err := modfile.ParseWork("go.work", readRoot(t, "go.work"), nil)
	require.NoError(t, err)
	var uses []string
	for _, u := range wf.Use {
		uses = append(uses, u.Path)
	}
	for _, s := range devstack.Services {
		require.Contains(t, uses, "./services/"+s.Name, "go.work")
	}
	for _, u := range uses {
		if name, ok := strings.CutPrefix(u, "./services/"); ok {
			require.Contains(t, listNames(), name, "go.work uses %s, which pkg/devstack's Services lacks", u)
		}
	}
	require.Contains(t, uses, "./deploy")
}

// TestCompose: docker-compose.yml runs each service on its port with its
// own database, gives every process each service's address, and the
// gateway waits for all of them.
func TestCompose(t *testing.T) {
	var compose struct {
		Env      map[string]string `json:"x-service-env"`
		Services map[string]struct {
			Build *struct {
				Args map[string]string `json:"args"`
			} `json:"build"`
			Environment map[string]string `json:"environment"`
			DependsOn   any               `json:"depends_on"`
		} `json:"services"`
	}
	require.NoError(t, yaml.Unmarshal(readRoot(t, "docker-compose.yml"), &compose))
	want := append(listNames(), "gateway", "postgres", "redis")
	var got []string
	for name := range compose.Services {
		got = append(got, name)
	}
	require.ElementsMatch(t, want, got, "docker-compose.yml's services")
	pg := compose.Services["postgres"].Environment["POSTGRES_DB"]
	initdb := string(readRoot(t, "deploy/docker/initdb/10-databases.sql"))
	devdb := string(readRoot(t, "deploy/k8s/overlays/development/initdb.sql"))
	for _, s := range devstack.Services {
		c := compose.Services[s.Name]
		require.NotNil(t, c.Build, s.Name)
		require.Equal(t, s.Name, c.Build.Args["SERVICE"], "compose %s builds its binary", s.Name)
		require.Equal(t, fmt.Sprintf("0.0.0.0:%d", s.Port), c.Environment["SWITCHBOARD_GRPC_ADDR"], "compose %s", s.Name)
		db := "switchboard_" + s.Name
		require.Contains(t, c.Environment["SWITCHBOARD_DATABASE_URL"], "/"+db+"?", "compose %s: its own database", s.Name)
		created := regexp.MustCompile(`(?m)^CREATE DATABASE ` + db + `;$`)
		require.True(t, pg == db || created.MatchString(initdb), "deploy/docker/initdb creates %s", db)
		require.True(t, created.MatchString(devdb), "the development overlay's initdb.sql creates %s", db)
		require.Equal(t, fmt.Sprintf("%s:%d", s.Name, s.Port), compose.Env[s.AddrEnv], "compose's x-service-env %s", s.AddrEnv)
	}
	// Every process gets what has no use in a container as its default.
	for name, p := range processes(t) {
		env := compose.Services[name].Environment
		for _, v := range p.Vars {
			if v.mustSet() {
				require.NotEmpty(t, env[v.Name], "compose %s reads %s (default %q), which a container must set", name, v.Name, v.Default)
			}
		}
		require.Equal(t, fmt.Sprintf("0.0.0.0:%d", p.Port), env[p.ListenEnv], "compose %s: %s", name, p.ListenEnv)
	}
	deps, _ := compose.Services["gateway"].DependsOn.([]any)
	for _, s := range devstack.Services {
		require.True(t, slices.Contains(deps, any(s.Name)), "compose: the gateway depends on %s", s.Name)
	}
}

// TestREADMEAddresses: the README's configuration table gives each
// service's default address and its variable.
func TestREADMEAddresses(t *testing.T) {
	readme := string(readRoot(t, "README.md"))
	var grpcRow string
	for _, line := range strings.Split(readme, "\n") {
		if strings.HasPrefix(line, "| `SWITCHBOARD_GRPC_ADDR` |") {
			grpcRow = line
		}
	}
	require.NotEmpty(t, grpcRow, "README: the SWITCHBOARD_GRPC_ADDR row")
	for _, s := range devstack.Services {
		require.Contains(t, grpcRow, fmt.Sprintf("%s `127.0.0.1:%d`", s.Name, s.Port), "README: %s's default address", s.Name)
		row := regexp.MustCompile("(?m)^\\| `" + s.AddrEnv + "` \\|.*`127\\.0\\.0\\.1:" + fmt.Sprint(s.Port) + "`")
		require.True(t, row.MatchString(readme), "README: the row of %s with its default 127.0.0.1:%d", s.AddrEnv, s.Port)
	}
}

// TestManifestVariablesDocumented: every variable the manifests set is in
// the README's configuration table.
func TestManifestVariablesDocumented(t *testing.T) {
	readme := string(readRoot(t, "README.md"))
	for _, dir := range overlays {
		o := build(t, dir)
		names := map[string]bool{}
		for _, d := range o.deployments {
			for _, c := range d.Spec.Template.Spec.Containers {
				for _, e := range c.Env {
					names[e.Name] = true
				}
			}
		}
		for _, c := range o.configMaps {
			for k := range c.Data {
				names[k] = true
			}
		}
		for n := range names {
			if strings.HasPrefix(n, "SWITCHBOARD_") {
				require.True(t, strings.Contains(readme, "`"+n+"`"), "README \"Configuration\" must document %s (set in %s)", n, dir)
			}
		}
	}
}
