package domain

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVariables(t *testing.T) {
	require.Equal(t, []int{1, 2, 1}, Variables("{{1}} {{2}} {{1}}"))
	require.Equal(t, 2, VariableCount("{{1}} {{2}} {{1}}"))
	require.Nil(t, Variables("{{ 1 }} {x} {{a}}"), "only {{n}} is a variable")
	require.Equal(t, []int{-1}, Variables("{{99999999999999999999}}"), "an overflowing number is never valid")
	require.Equal(t, 0, VariableCount("plain"))
}

func TestRenderText(t *testing.T) {
	s := func(v string) *string { return &v }
	tmpl := BusinessTemplate{Components: []Component{
		{Type: ComponentHeader, Format: s(HeaderText), Text: s("Order {{1}}")},
		{Type: ComponentBody, Text: s("Hi {{1}}, {{2}} is ready, {{1}}. {{3}}")},
		{Type: ComponentFooter, Text: s("Bye")},
		{Type: ComponentButtons, Buttons: []Button{{Type: ButtonURL, URL: s("https://x.example/{{1}}")}, {Type: "QUICK_REPLY", Text: s("ok")}}},
	}}
	require.Equal(t, "Order #7\nHi Ann, #7 is ready, Ann. {{3}}\nBye", tmpl.RenderText([]string{"#7"}, []string{"Ann", "#7"}),
		"a variable without a value stays")
	require.Equal(t, 3, tmpl.BodyParamsCount())
	require.Equal(t, 1, tmpl.HeaderVariables())
	require.Equal(t, 1, tmpl.URLVariables())
	require.Equal(t, HeaderText, *tmpl.HeaderFormat())
	require.Nil(t, BusinessTemplate{}.HeaderFormat())
	require.Equal(t, "Hello", BusinessTemplate{Components: []Component{{Type: ComponentBody, Text: s("Hello")}}}.RenderText(nil, nil))
}
