.PHONY: test build run lint

# Installs what the tests need where it is missing, then runs every test.
test:
	./scripts/test.sh

build:
	go build -o bin/kmirror ./cmd/kmirror

run:
	go run ./cmd/kmirror server

lint:
	gofmt -l . | (! grep .)
	go vet ./...
	staticcheck ./...
