package openapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	apiv1 "switchboard.dev/proto/switchboard/api/v1"
)

// Sections: the reference groups its operations the way a client reads
// the API (the spec's sections), not by the service that serves them. A
// route's section is its method's (switchboard.api.v1.section) option, else
// its service's default_section (proto/switchboard/api/v1/reference.proto);
// a route without one fails the generation. Each section is a tag with its
// title and description, the tags are in the Section enum's order, and
// x-tagGroups puts them under the menu headings Redoc shows. Operations
// are in the order of their methods in the protos, section by section: the
// paths object is written in that order (Redoc lists a tag's operations in
// the order of the paths), and each path's methods get, post, put, patch,
// delete (orderPaths).

// sectionOf is the section of a method's routes.
func sectionOf(sd protoreflect.ServiceDescriptor, md protoreflect.MethodDescriptor) apiv1.Section {
	if s, _ := proto.GetExtension(md.Options(), apiv1.E_Section).(apiv1.Section); s != apiv1.Section_SECTION_UNSPECIFIED {
		return s
	}
	s, _ := proto.GetExtension(sd.Options(), apiv1.E_DefaultSection).(apiv1.Section)
	return s
}

// sectionInfo is a section's presentation; an error for none, or one
// without a title, description or group.
func sectionInfo(s apiv1.Section) (*apiv1.SectionInfo, error) {
	if s == apiv1.Section_SECTION_UNSPECIFIED {
		return nil, errors.New("a route without a section: set (switchboard.api.v1.default_section) on its service " +
			"or (switchboard.api.v1.section) on its method")
	}
	ev := s.Descriptor().Values().ByNumber(s.Number())
	if ev == nil {
		return nil, errors.New("a section the Section enum lacks")
	}
	info, _ := proto.GetExtension(ev.Options(), apiv1.E_SectionInfo).(*apiv1.SectionInfo)
	if info.GetTitle() == "" || info.GetDescription() == "" || info.GetGroup() == "" {
		return nil, errors.New(string(ev.Name()) + " lacks a title, description or group in its section_info")
	}
	return info, nil
}

func sectionTitle(s apiv1.Section) string {
	info, _ := sectionInfo(s)
	return info.GetTitle()
}

// sectionRank is a section's place in the Section enum.
func sectionRank(s apiv1.Section) int {
	if ev := s.Descriptor().Values().ByNumber(s.Number()); ev != nil {
		return ev.Index()
	}
	return 0
}

// tagList is the document's tags, the sections of its routes in the enum's
// order, and x-tagGroups, their headings.
func tagList(routes []route) (tags, groups []any) {
	used := map[apiv1.Section]bool{}
	var sections []apiv1.Section
	for _, rt := range routes {
		if !used[rt.section] {
			used[rt.section] = true
			sections = append(sections, rt.section)
		}
	}
	sort.Slice(sections, func(i, j int) bool { return sectionRank(sections[i]) < sectionRank(sections[j]) })
	byGroup := map[string]map[string]any{}
	for _, s := range sections {
		info, _ := sectionInfo(s)
		tags = append(tags, map[string]any{"name": info.GetTitle(), "description": info.GetDescription()})
		g := byGroup[info.GetGroup()]
		if g == nil {
			g = map[string]any{"name": info.GetGroup(), "tags": []any{}}
			byGroup[info.GetGroup()] = g
			groups = append(groups, g)
		}
		g["tags"] = append(g["tags"].([]any), info.GetTitle())
	}
	return tags, groups
}

// orderPaths writes the paths in the order of their operations' sections
// and methods (a path that serves several sections goes where its first
// one does), and each path's methods in the usual order.
func orderPaths(paths map[string]any, routes []route) ordered {
	// Within a section: first the routes of the services the section is
	// the default of, then those other services lend it; the methods that
	// answer 403 to every key last; else the methods' order. A path served
	// only through a template's copy (shadowed) goes after the template's.
	type key struct{ section, borrowed, blocked, order, copied int }
	less := func(a, b key) bool {
		for _, d := range []int{a.section - b.section, a.borrowed - b.borrowed, a.blocked - b.blocked, a.order - b.order, a.copied - b.copied} {
			if d != 0 {
				return d < 0
			}
		}
		return false
	}
	keys := map[string]key{}
	for p := range paths {
		first := true
		for _, rt := range routes {
			if rt.path != p && (strings.Contains(p, "{") || !rt.match.MatchString(p)) {
				continue // neither this path's route nor one copied into it (shadowed)
			}
			if _, has := paths[p].(map[string]any)[strings.ToLower(rt.verb)]; !has {
				continue
			}
			k := key{section: sectionRank(rt.section), order: rt.order}
			if d, _ := proto.GetExtension(rt.service.Options(), apiv1.E_DefaultSection).(apiv1.Section); d != rt.section {
				k.borrowed = 1
			}
			if rt.access.GetBlocked() {
				k.blocked = 1
			}
			if rt.path != p {
				k.copied = 1
			}
			if first || less(k, keys[p]) {
				keys[p], first = k, false
			}
		}
	}
	names := sortedKeys(paths)
	sort.SliceStable(names, func(i, j int) bool {
		a, b := keys[names[i]], keys[names[j]]
		if a != b {
			return less(a, b)
		}
		return names[i] < names[j]
	})
	out := ordered{values: map[string]any{}}
	for _, p := range names {
		item := paths[p].(map[string]any)
		methods := ordered{values: item}
		for _, verb := range []string{"get", "post", "put", "patch", "delete"} {
			if _, ok := item[verb]; ok {
				methods.keys = append(methods.keys, verb)
			}
		}
		for _, k := range sortedKeys(item) {
			if !strings.Contains(" get post put patch delete ", " "+k+" ") {
				methods.keys = append(methods.keys, k)
			}
		}
		out.keys = append(out.keys, p)
		out.values[p] = methods
	}
	return out
}

// ordered is a JSON object written in the order of its keys (a map is
// written sorted).
type ordered struct {
	keys   []string
	values map[string]any
}

func (o ordered) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	out := []byte{'{'}
	for i, k := range o.keys {
		if i > 0 {
			out = append(out, ',')
		}
		b.Reset()
		if err := enc.Encode(k); err != nil {
			return nil, err
		}
		out = append(out, bytes.TrimSpace(b.Bytes())...)
		out = append(out, ':')
		b.Reset()
		if err := enc.Encode(o.values[k]); err != nil {
			return nil, err
		}
		out = append(out, bytes.TrimSpace(b.Bytes())...)
	}
	return append(out, '}'), nil
}
