package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/taskloom/taskloom/internal/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(app.Main(ctx, app.Options{
		Args:   os.Args[1:],
		Stdin:  os.Stdin,
		Stdout: os.Stdout,
		Stderr: os.Stderr,
		TuneGC: true,
	}))
}
