package notify

// SetRoomsPerFlush sets how many rooms a flush of s claims at most, for
// tests that need more rooms than that without a thousand of them.
func (s *Service) SetRoomsPerFlush(n int) { s.perFlush = n }
