# Switchboard: the two commands a newcomer needs are `make run` and `make test`.
SHELL := /bin/bash
ROOT := $(CURDIR)
BIN := $(ROOT)/.bin
export PATH := $(BIN):$(PATH)

# The services: one folder each under services/ (pkg/devstack's Services is
# the list; deploy's tests fail when a folder and the list disagree).
SERVICES := $(sort $(notdir $(patsubst %/,%,$(dir $(wildcard services/*/go.mod)))))
# Every Go module of the workspace (deploy: the manifests' and the service
# list's tests).
MODULES := proto pkg gateway $(addprefix services/,$(SERVICES)) deploy
# Every binary: name=package directory.
CMDS := $(foreach s,$(SERVICES),$(s)=services/$(s)/cmd/$(s)) gateway=gateway/cmd/gateway devstack=pkg/devstack/cmd/devstack

.PHONY: run test bench tools generate check-generate check-tree lint vet build clean

## run: start PostgreSQL, Redis, every service and the gateway; print the URL and a key
run: build
	@deploy/local/run.sh

## test: unit, integration and end-to-end tests on real, ephemeral PostgreSQL and Redis
test: check-tree check-generate lint build
	@MODULES="$(MODULES)" SWITCHBOARD_BIN_DIR="$(BIN)" deploy/local/test.sh

## bench: the benchmarks on ephemeral servers, each beside a reference measured
## in the same run: contacts (100,000: list/search/phone p50/p95/p99), messages
## and the inbox at 1 million messages, sustained sends vs pgbench, webhook fan-out
## of 10,000 events vs a bare net/http client, two webhooks replicas vs one, a
## polled Telegram bot's updates vs the sandbox's inbound route, reads through the
## gateway and over gRPC vs pgbench -S, the largest accepted body of each route with
## a list vs its minimal request, invoice previews through the gateway and over gRPC vs
## pgbench -S, recovery after kill -9 (the 503 window vs the new process's time to
## listen; a killed messaging replica's claimed sends vs the lease), reads through
## the gateway with one contacts replica vs two, the CPU of every process per
## message sent and per webhook delivery (docs/capacity.md); BENCH picks
BENCH ?= Contacts100k|Messages1M|SendMessages|WebhooksFanout|TwoReplicas|TelegramIngest|Reads|LargestBodies|InvoicePreview|Recovery|ReadReplicas|Capacity
bench: build
	@MODULES="gateway services/webhooks" SWITCHBOARD_BIN_DIR="$(BIN)" GO_TEST_FLAGS='-run ^$$ -bench $(BENCH) -benchtime 1x' deploy/local/test.sh

## tools: install the pinned Go tools (buf, protoc plugins) into .bin/
tools:
	@deploy/local/tools.sh

## generate: regenerate all code from proto/ (offline)
generate: tools
	@cd proto && buf generate --path switchboard

## check-generate: fail when the committed generated code differs from what the protos give
check-generate: tools
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && cp -r proto/. "$$tmp" && \
		(cd "$$tmp" && find switchboard -name '*.pb*.go' -delete && buf generate --path switchboard) && \
		if ! diff -r -q proto "$$tmp" >/dev/null; then \
			echo "generated code is out of date with proto/: run 'make generate' and commit" >&2; \
			diff -r -q proto "$$tmp" >&2; exit 1; fi

## check-tree: fail when a tracked file is an executable or over 1 MB (build output
## belongs under .bin/; exceptions are listed in the script)
check-tree:
	@deploy/local/check-tree.sh

## lint: go vet on every module and buf lint
lint: tools vet
	@cd proto && buf lint

vet:
	@for m in $(MODULES); do (cd $$m && go vet ./...) || exit 1; done

## build: build every binary into .bin/
build: docs-assets
	@for c in $(CMDS); do name=$${c%%=*}; dir=$${c#*=}; \
		go build -o $(BIN)/$$name ./$$dir || exit 1; done

## docs-assets: fetch the pinned Redoc bundle the gateway embeds for /v2/docs
## (npm registry, checked by SHA-256; skipped when present)
.PHONY: docs-assets
docs-assets:
	@deploy/local/docs-assets.sh

clean:
	rm -rf .run .bin
