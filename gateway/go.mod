module switchboard.dev/gateway

go 1.25.0
