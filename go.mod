module github.com/threadline-bot/threadline

go 1.26.8
