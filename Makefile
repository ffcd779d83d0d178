# Panorama: one Kubernetes-native view over many clusters.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

CACHE ?= $(HOME)/.cache/panorama
LOCALBIN ?= $(CACHE)/bin
CONTROLLER_GEN_VERSION ?= v0.23.0
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_GEN_VERSION)
STATICCHECK_VERSION ?= v0.8.2
STATICCHECK ?= $(LOCALBIN)/staticcheck-$(STATICCHECK_VERSION)
# Two cores: one package at a time keeps control planes and databases from
# starving each other.
GOTEST_FLAGS ?= -p 1 -count=1 -timeout 40m

.PHONY: all
all: build

.PHONY: help
help: ## Lists the targets with what they do.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

$(CONTROLLER_GEN):
	mkdir -p $(LOCALBIN)
	GOBIN=$(LOCALBIN)/cg-tmp go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	mv $(LOCALBIN)/cg-tmp/controller-gen $@ && rm -rf $(LOCALBIN)/cg-tmp

$(STATICCHECK):
	mkdir -p $(LOCALBIN)
	GOBIN=$(LOCALBIN)/sc-tmp go install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv $(LOCALBIN)/sc-tmp/staticcheck $@ && rm -rf $(LOCALBIN)/sc-tmp

.PHONY: lint
lint: $(STATICCHECK) ## go vet and staticcheck.
	go vet ./... && $(STATICCHECK) ./...

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Deepcopy functions of the API types.
	$(CONTROLLER_GEN) object paths=./apis/...

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## CRDs into config/crd, RBAC into config/rbac, CRDs copied into the chart.
	$(CONTROLLER_GEN) crd paths=./apis/cluster/... output:crd:artifacts:config=config/crd/bases \
		rbac:roleName=panorama-controller-manager paths=./controllers/... output:rbac:artifacts:config=config/rbac
	mkdir -p charts/panorama/crds charts/panorama/files && cp config/crd/bases/*.yaml charts/panorama/crds/
	cp config/rbac/role.yaml charts/panorama/files/controller-role.yaml

.PHONY: build
build: ## Binaries into bin/.
	go build -o bin/ ./cmd/...

.PHONY: plugin
plugin: ## Installs kubectl-panorama and its completion hook into $(go env GOPATH)/bin.
	bin="$$(go env GOPATH)/bin" && mkdir -p "$$bin" && \
	go build -o "$$bin/kubectl-panorama" ./cmd/panorama && \
	install -m 0755 plugins/kubectl_complete-panorama "$$bin/kubectl_complete-panorama"

.PHONY: test-assets
test-assets: ## Builds kube-apiserver, etcd, kubectl, helm and k9s (cached).
	hack/test-assets.sh

# The three tiers: test-unit (no control plane, SQLite alone), test (the
# databases and control planes, all but test/e2e) and test-e2e.
E2E_PKG := ./test/e2e/
NON_E2E_PKGS = $$(go list ./... | grep -v '/test/e2e$$')

.PHONY: test-unit
test-unit: ## Unit tier (go test -short): no control plane, no database server, SQLite alone.
	go test -short -count=1 -timeout 10m $(NON_E2E_PKGS)

.PHONY: test
test: ## Every test but test/e2e, against real control planes and real databases.
	export KUBEBUILDER_ASSETS="$$(hack/test-assets.sh)"; \
	go vet ./... && go test $(GOTEST_FLAGS) $(NON_E2E_PKGS)

.PHONY: test-e2e
test-e2e: ## The end-to-end tests (test/e2e): the binaries, kubectl, helm and k9s against control planes, the soak test and the scale-out proof.
	export KUBEBUILDER_ASSETS="$$(hack/test-assets.sh)"; \
	go test $(GOTEST_FLAGS) $(E2E_PKG)

FUZZTIME ?= 30s

.PHONY: fuzz
fuzz: ## Runs every fuzz target of apiserver and storage for FUZZTIME each (make test runs their seeds).
	FUZZTIME=$(FUZZTIME) hack/fuzz.sh ./apiserver/... ./storage/...

.PHONY: bench
bench: ## Benchmarks, each printed as ratios to a baseline measured in the same run.
	export KUBEBUILDER_ASSETS="$$(hack/test-assets.sh)"; \
	go test -v -run '^$$' -bench . -benchtime 1x -timeout 60m ./storage/... ./controllers/ ./controllers/synchronizer/ ./apiserver/ ./apiserver/watchcache/

.PHONY: bench-count-1m
bench-count-1m: ## The count, search and paged-list benchmarks, of the store and of the watch cache, over 1,000,000 pods on MariaDB and PostgreSQL (ingesting them takes a while).
	PANORAMA_BENCH_COUNT_OBJECTS=1000000 go test -v -run '^$$' -bench 'Benchmark(Count|CachedCount|CachedSearch)/(mysql|postgres)' -benchtime 1x -timeout 240m ./storage/sqlstore/ ./apiserver/watchcache/

.PHONY: bench-1m
bench-1m: ## The fleet benchmark at 1M stored objects (100k in one member, seen through 10 Clusters) on MariaDB and PostgreSQL; not in bench or CI.
	export KUBEBUILDER_ASSETS="$$(hack/test-assets.sh)"; \
	PANORAMA_BENCH_FLEET_OBJECTS=100000 PANORAMA_BENCH_FLEET_CLUSTERS=1,10 \
	go test -v -run '^$$' -bench 'BenchmarkFleet/(mysql|postgres)' -benchtime 1x -timeout 180m ./controllers/

.PHONY: bench-fleet-2m
bench-fleet-2m: ## Issue 35's run by hand (hours; not in bench or CI), on MariaDB and PostgreSQL: 2M objects through 100 Clusters (freshness, lists, search, memory), 2M realistic pods under a watch cache budget of a quarter of their JSON, 1,000 tenants listing across 100 clusters, 100 Clusters added at once.
	export KUBEBUILDER_ASSETS="$$(hack/test-assets.sh)"; \
	PANORAMA_BENCH_FLEET_OBJECTS=20000 PANORAMA_BENCH_FLEET_CLUSTERS=100 \
	go test -v -run '^$$' -bench 'BenchmarkFleet$$/(mysql|postgres)' -benchtime 1x -timeout 480m ./controllers/ && \
	PANORAMA_BENCH_RECONCILE_OBJECTS=20000 PANORAMA_BENCH_RECONCILE_CLUSTERS=1,100 \
	go test -v -run '^$$' -bench 'BenchmarkFleetReconcile/(mysql|postgres)' -benchtime 1x -timeout 120m ./controllers/ && \
	PANORAMA_BENCH_COUNT_OBJECTS=62500 PANORAMA_BENCH_BUDGET_RESOURCES=32 \
	go test -v -run '^$$' -bench 'BenchmarkBudgetedCache/(mysql|postgres)' -benchtime 1x -timeout 480m ./apiserver/watchcache/ && \
	PANORAMA_BENCH_TENANTS=1000 PANORAMA_BENCH_TENANT_CLUSTERS=100 \
	go test -v -run '^$$' -bench 'BenchmarkTenantReads' -benchtime 1x -timeout 120m ./apiserver/

.PHONY: run
run: ## A local demo: member clusters, controller manager and API server, SQLite.
	@export KUBEBUILDER_ASSETS="$$(hack/test-assets.sh demo)" && \
	echo "run: building and starting the demo (the first build takes minutes, later ones seconds)" >&2 && \
	go run ./cmd/panorama-demo

.PHONY: verify
verify: generate manifests ## Fails when generated files are stale, a Go file is not gofmt'ed or git tracks a binary.
	git diff --exit-code -- apis config charts
	unformatted="$$(git ls-files -z '*.go' | xargs -0 gofmt -l)"; \
	if [ -n "$$unformatted" ]; then echo "not gofmt'ed (gofmt -w):" $$unformatted; exit 1; fi
	hack/check-tracked-files.sh
