package gateway

import (
	"fmt"
	"reflect"
	"testing"

	"switchboard.dev/pkg/devstack"
)

// TestEveryServiceIsABackend: the gateway reaches every service of the one
// list (pkg/devstack's Services) through the list's variable, whose
// default is the service's own port, and has no backend the list lacks.
func TestEveryServiceIsABackend(t *testing.T) {
	defaults := map[string]string{}
	ct := reflect.TypeFor[Config]()
	for i := range ct.NumField() {
		f := ct.Field(i)
		defaults[f.Tag.Get("env")] = f.Tag.Get("envDefault")
	}
	names := map[string]bool{}
	for _, b := range backends(Config{}) {
		names[b.name] = true
	}
	for _, s := range devstack.Services {
		if !names[s.Name] {
			t.Errorf("the gateway has no backend %s (gateway.go's backends)", s.Name)
		}
		def, ok := defaults[s.AddrEnv]
		if !ok {
			t.Errorf("the gateway's Config reads no %s", s.AddrEnv)
		} else if want := fmt.Sprintf("127.0.0.1:%d", s.Port); def != want {
			t.Errorf("%s defaults to %q, the list's port is %s", s.AddrEnv, def, want)
		}
		delete(names, s.Name)
	}
	for n := range names {
		t.Errorf("backend %s is not in pkg/devstack's Services", n)
	}
}
