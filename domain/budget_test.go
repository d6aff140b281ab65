package domain_test

import (
	"slices"
	"testing"

	"github.com/taskloom/taskloom/domain"
)

// TestSubtaskBudgets: subtasks asked together without a budget share
// what their parent has left alike (one alone gets a quarter), those that
// name one ask for it, and the shares fit in what the named ones leave.
func TestSubtaskBudgets(t *testing.T) {
	for _, c := range []struct {
		name  string
		left  int64
		asked []int64
		want  []int64
	}{
		{"three unnamed", 999_000, []int64{0, 0, 0}, []int64{333_000, 333_000, 333_000}},
		{"alone", 1000, []int64{0}, []int64{250}},
		{"alone, named", 1000, []int64{600}, []int64{600}},
		{"named and unnamed", 85, []int64{50, 0, 0}, []int64{50, 17, 17}},
		{"named more than left", 85, []int64{1000, 0}, []int64{1000, 1}},
		{"little left", 2, []int64{0, 0, 0}, []int64{1, 1, 1}},
		{"nothing left", 0, []int64{0, 5}, []int64{0, 0}},
	} {
		if got := domain.SubtaskBudgets(c.left, c.asked); !slices.Equal(got, c.want) {
			t.Errorf("%s: SubtaskBudgets(%d, %v) = %v; want %v", c.name, c.left, c.asked, got, c.want)
		}
	}
}
