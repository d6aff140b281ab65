// Package services holds Taskloom's long-lived components: the task
// service (the fair queue and the iteration loop), the notification
// service (batched, durable room messages), and the scheduler (recurring
// tasks, services/schedules).
package services
