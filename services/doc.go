// Package services holds Taskloom's long-lived components: the task
// service (the fair queue and the iteration loop) and the notification
// service (batched, durable room messages).
package services
