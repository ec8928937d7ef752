package app_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard.dev/services/contacts/internal/app"
	"switchboard.dev/services/contacts/internal/domain"
)

func TestContactCards(t *testing.T) {
	s := newService(t, 0)
	a := create(t, s, 1, app.NewContact{Name: "Ann"})
	b := create(t, s, 1, app.NewContact{Name: "Bob"})
	other := create(t, s, 2, app.NewContact{Name: "Eve"})

	cards, err := s.ContactCards(ctx, 1, []int64{b.ID, a.ID, other.ID, 999_999})
	require.NoError(t, err)
	slices.SortFunc(cards, func(x, y domain.Card) int { return int(x.ID - y.ID) })
	require.Equal(t, []domain.Card{{ID: a.ID, Name: "Ann"}, {ID: b.ID, Name: "Bob"}}, cards,
		"another company's contact and unknown ids are left out")

	cards, err = s.ContactCards(ctx, 1, nil)
	require.NoError(t, err)
	require.Empty(t, cards)
}
