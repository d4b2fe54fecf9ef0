module github.com/orbit-tasks/orbit/worker-sdk-go

go 1.26
