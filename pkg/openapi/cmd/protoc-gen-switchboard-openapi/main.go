// Command protoc-gen-switchboard-openapi is the protoc plugin `make
// generate` runs (proto/buf.gen.yaml, strategy all): it writes public.json
// and operator.json, the OpenAPI 3.1 documents of pkg/openapi, from every
// file buf hands it.
package main

import (
	"bytes"
	"encoding/json"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/pluginpb"

	"switchboard.dev/pkg/openapi"
)

func main() {
	protogen.Options{}.Run(func(p *protogen.Plugin) error {
		p.SupportedFeatures = uint64(pluginpb.CodeGeneratorResponse_FEATURE_PROTO3_OPTIONAL)
		var files []protoreflect.FileDescriptor
		for _, f := range p.Files {
			if f.Generate {
				files = append(files, f.Desc)
			}
		}
		for _, out := range []struct {
			name string
			kind openapi.Kind
		}{{"public.json", openapi.Public}, {"operator.json", openapi.Operator}} {
			doc, err := openapi.Build(out.kind, files)
			if err != nil {
				return err
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(doc); err != nil {
				return err
			}
			p.NewGeneratedFile(out.name, "").Write(buf.Bytes())
		}
		return nil
	})
}
