module switchboard.dev/pkg

go 1.25.0

require (
	google.golang.org/grpc v1.76.0
	switchboard.dev/proto v0.0.0
)

require (
	golang.org/x/sys v0.34.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20250929231259-57b25ae835d4 // indirect
	google.golang.org/protobuf v1.36.10 // indirect
)

replace switchboard.dev/proto => ../proto
