module switchboard.dev/services/identity

go 1.25.0
