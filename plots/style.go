package plots

import (
	"image/color"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
)

// Colours of the pictures. Red and orange are kept for findings; clients
// get calm colours so that a finding stands out.
var (
	clientPalette = []color.NRGBA{
		{0x1f, 0x77, 0xb4, 0xff}, // blue
		{0x2c, 0xa0, 0x2c, 0xff}, // green
		{0x94, 0x67, 0xbd, 0xff}, // purple
		{0x17, 0xbe, 0xcf, 0xff}, // cyan
		{0x8c, 0x56, 0x4b, 0xff}, // brown
		{0x39, 0x3b, 0x79, 0xff}, // navy
		{0x63, 0x79, 0x39, 0xff}, // olive
		{0x7f, 0x7f, 0x7f, 0xff}, // grey
	}
	faultPalette = []color.NRGBA{
		{0xf2, 0xc1, 0x2e, 0x55}, // amber
		{0x8e, 0x6c, 0xc4, 0x40}, // lavender
		{0x4c, 0xa8, 0x8a, 0x40}, // teal
		{0xa0, 0xa0, 0xa0, 0x50}, // grey
		{0xd4, 0x8a, 0x5a, 0x40}, // tan
	}
	laneStripe  = color.NRGBA{0xf4, 0xf6, 0xf9, 0xff}
	overlapFill = color.NRGBA{0xe0, 0x10, 0x10, 0x55}
	overlapEdge = color.NRGBA{0xd0, 0x00, 0x00, 0xff}
	fencedFill  = color.NRGBA{0xff, 0x8c, 0x00, 0x55}
	fencedEdge  = color.NRGBA{0xe0, 0x70, 0x00, 0xff}
	stuckFill   = color.NRGBA{0x50, 0x50, 0x50, 0x30}
	stuckEdge   = color.NRGBA{0x40, 0x40, 0x40, 0xff}
	goodCell    = color.NRGBA{0xc9, 0xeb, 0xc9, 0xff}
	goodEdge    = color.NRGBA{0x2e, 0x7d, 0x32, 0xff}
	badCell     = color.NRGBA{0xf6, 0xc4, 0xc4, 0xff}
	badEdge     = color.NRGBA{0xc6, 0x28, 0x28, 0xff}
	emptyCell   = color.NRGBA{0xee, 0xee, 0xee, 0xff}
)

// clientColor is the colour of lane i.
func clientColor(i int) color.NRGBA { return clientPalette[i%len(clientPalette)] }

// pale is a light, see-through version of a colour.
func pale(c color.NRGBA) color.NRGBA {
	return color.NRGBA{c.R/3 + 170, c.G/3 + 170, c.B/3 + 170, 0xff}
}

// darken is an opaque, darker version of a (translucent) colour, for text
// and edges.
func darken(c color.NRGBA) color.NRGBA {
	return color.NRGBA{uint8(int(c.R) * 6 / 10), uint8(int(c.G) * 6 / 10), uint8(int(c.B) * 6 / 10), 0xff}
}

// labelStyle is a sans-serif text style of the given size.
func labelStyle(size float64, bold bool, col color.Color) text.Style {
	f := font.Font{Typeface: "Liberation", Variant: "Sans"}
	if bold {
		f.Weight = xfont.WeightBold
	}
	if col == nil {
		col = color.Black
	}
	return text.Style{Color: col, Font: font.From(f, vg.Points(size)), Handler: plot.DefaultTextHandler}
}

// setFont switches a style to the sans-serif font, keeping its alignment.
func setFont(sty *text.Style, size float64, bold bool) {
	sty.Font = labelStyle(size, bold, nil).Font
}
