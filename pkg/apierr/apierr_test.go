package apierr

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestCatalogueCodesAndNamesAreUnique(t *testing.T) {
	codes, names := map[int32]bool{}, map[string]bool{}
	for _, d := range Catalogue() {
		require.False(t, codes[d.Code], "code %d twice", d.Code)
		require.False(t, names[d.Name], "name %s twice", d.Name)
		require.NotZero(t, d.Status, d.Name)
		require.NotEmpty(t, d.Message, d.Name)
		codes[d.Code], names[d.Name] = true, true
	}
	d, ok := ByCode(10010)
	require.True(t, ok)
	require.Equal(t, 400, d.Status)
}

func TestErrorSurvivesGRPC(t *testing.T) {
	in := RateLimited(3)
	st := status.Convert(fmt.Errorf("wrapped: %w", in))
	require.Equal(t, codes.ResourceExhausted, st.Code())

	// As a peer service would receive it: only the status crosses.
	out, ok := FromError(status.ErrorProto(in.GRPCStatus().Proto()))
	require.True(t, ok)
	require.Equal(t, int32(429), out.Code)
	require.Equal(t, 3, out.RetryAfter)
	require.Equal(t, map[string]any{}, out.Detail)

	f, ok := FromError(status.ErrorProto(ForbiddenError().GRPCStatus().Proto()))
	require.True(t, ok)
	require.Equal(t, "Forbidden", f.Detail)

	_, ok = FromError(errors.New("plain"))
	require.False(t, ok)
}
