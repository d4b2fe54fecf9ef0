module github.com/orbit-tasks/orbit/worker-sdk-go

go 1.26

require (
	github.com/coder/websocket v1.8.15
	github.com/go-sql-driver/mysql v1.11.0
)

require filippo.io/edwards25519 v1.2.0 // indirect
