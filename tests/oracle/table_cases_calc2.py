"""`compare_table` fixtures of the libreoffice_calc tasks 2/2 (see `table_cases`)."""

from __future__ import annotations

import datetime

from tests.oracle.table_cases import case, months
from tests.oracle.workbooks import Chart, Conditional, Pivot, edit, restyle, sheet

# Data validation drop-down with Pass / Fail / Held.
_marks = sheet("Sheet1", [["Order Id", "Mark", "Grade", "Pass/Fail/Held"], [101, 78, "B", "Pass"],
                          [102, 40, "F", "Fail"],
                          [103, 55, "C", None]])
_dv = (restyle((_marks,), validations=(("D2:D29", "list", '"Pass,Fail,Held"'),)))
case("ecb0df7a", (_marks,), right=_dv, libreoffice=True,
     wrong={"other-column": restyle((_marks,), validations=(("E2:E29", "list", '"Pass,Fail,Held"'),)),
            "two-values": restyle((_marks,), validations=(("D2:D29", "list", '"Pass,Fail"'),)),
            "none": (_marks,)},
     whole_column=(restyle((_marks,), validations=(("D2:D1048576", "list", '"Pass,Fail,Held"'),)), 1.0))

# Calendar: weekend days with a red background.
_days = [datetime.date(2024, 3, d) for d in range(1, 15)]
_calendar_rows = [["Date", "Event"], *[[d, None] for d in _days]]
_weekend = [(f"A{i + 2}", "FFFF0000") for i, d in enumerate(_days) if d.weekday() >= 5]
_calendar = sheet("Sheet1", _calendar_rows, formats=[(f"A{i + 2}", "YYYY-MM-DD") for i in range(len(_days))])
case("8b1ce5f2", restyle((_calendar,), fills=tuple(_weekend)), libreoffice=True,
     wrong={"saturdays": restyle((_calendar,), fills=tuple(_weekend[::2])),
            "font-not-fill": restyle((_calendar,), fonts=tuple((c, "FFFF0000", False) for c, _ in _weekend))},
     conditional=(restyle((_calendar,), conditionals=(Conditional("A2:A15", "formula", ("WEEKDAY(A2,2)>5",),
                                                                  fill="FFFF0000"),)), (1.0, 1.0)))

# Decimal separator as comma: the CSV export (sheet_print) shows "3,5".
_numbers = [["Item", "Value"], ["a", 3.5], ["b", 1234.25], ["c", 7]]
_comma_formats = [(f"B{i}", "[$-419]General") for i in range(2, 5)]
case("a01fbce3", (sheet("Sheet1", _numbers, formats=_comma_formats),),
     wrong={"dots": (sheet("Sheet1", _numbers),),
            "truncated": (sheet("Sheet1", [_numbers[0], ["a", 3], ["b", 1234], ["c", 7]], formats=_comma_formats),)})

# Total row with a bar chart, growth row with a line chart.
_sales_months = [["Rep", "Jan", "Feb", "Mar", "Apr", "May", "Jun"], ["Kim", 10, 12, 9, 15, 14, 20],
                 ["Lee", 6, 8, 11, 5, 9, 10], ["Total", 16, 20, 20, 20, 23, 30],
                 ["Growth", None, 0.25, 0.0, 0.0, 0.15, 0.3043478261]]
_total_chart = Chart("col", (1, 4, 7, 4), (2, 1, 7, 1), "Total", "B8")
_growth_chart = Chart("line", (1, 5, 7, 5), (3, 1, 7, 1), "Growth", "J8")
case("0326d92d", (sheet("Sheet1", _sales_months, charts=[_total_chart, _growth_chart]),), libreoffice=True,
     wrong={"titles-swapped": (sheet("Sheet1", _sales_months, charts=[Chart("col", (1, 4, 7, 4), (2, 1, 7, 1),
                                                                            "Growth"),
                                                                      Chart("line", (1, 5, 7, 5), (3, 1, 7, 1),
                                                                            "Total", "J8")]),),
            "growth-wrong": (sheet("Sheet1", [*_sales_months[:4], ["Growth", None, 25, 0, 0, 15, 30.43]],
                                   charts=[_total_chart, _growth_chart]),)})

_monthly = [["Month", "Kim", "Lee", "Total"], *[[m, v, v + 2, 2 * v + 2] for m, v in months([4, 7, 5, 9])]]
case("0a2e43bf", (sheet("Sheet1", _monthly, charts=[Chart("line", (4, 1, 4, 5), (1, 2, 1, 5))]),), libreoffice=True,
     wrong={"bar": (sheet("Sheet1", _monthly, charts=[Chart("col", (4, 1, 4, 5), (1, 2, 1, 5))]),),
            "no-chart": (sheet("Sheet1", _monthly),)})

# Freeze A1:B1 (rows above 2 and columns before C).
_freeze_rows = [["Name", "Dept", "Q1", "Q2"], ["Ann", "Ops", 1, 2], ["Bob", "IT", 3, 4]]
case("4188d3a4", (sheet("Sheet1", _freeze_rows, freeze="C2"),),  # headless LibreOffice drops view settings
     wrong={"row-only": (sheet("Sheet1", _freeze_rows, freeze="A2"),), "none": (sheet("Sheet1", _freeze_rows),)})

# Two column charts, per-month totals of 2019 and 2020.
_costs = [["Month", "2019", "2020"], *[[m, v, v + 3] for m, v in months([30, 42, 38])]]
_cost_charts = [Chart("col", (2, 1, 2, 4), (1, 2, 1, 4), anchor="E2"), Chart("col", (3, 1, 3, 4), (1, 2, 1, 4),
                                                                              anchor="E20")]
case("347ef137", (sheet("Sheet1", _costs, charts=_cost_charts),), libreoffice=True,
     wrong={"horizontal": (sheet("Sheet1", _costs, charts=[Chart("bar", (2, 1, 2, 4), (1, 2, 1, 4), anchor="E2"),
                                                           Chart("bar", (3, 1, 3, 4), (1, 2, 1, 4), anchor="E20")]),),
            "one-chart": (sheet("Sheet1", _costs, charts=[Chart("col", (2, 1, 3, 4), (1, 2, 1, 4))]),)})

# Transpose B2:F5 to B8.
_matrix = [["Name", "Math", "Art", "Music", "Sport"], ["Ann", 1, 2, 3, 4], ["Bob", 5, 6, 7, 8], ["Cid", 9, 10, 11, 12]]
_transposed = [list(column) for column in zip(*_matrix, strict=True)]
_grid = [[None] * 6] + [[None, *row] for row in _matrix] + [[None] * 6, [None] * 6] + [[None, *r] for r in _transposed]
case("eb03d19a", (sheet("Sheet1", _grid),),
     wrong={"not-transposed": (sheet("Sheet1", [[None] * 6] + [[None, *r] for r in _matrix] + [[None] * 6] * 2
                                     + [[None, *r] for r in _matrix]),),
            "one-row-up": (sheet("Sheet1", _grid[:7] + _grid[8:]),)})

# Rename and copy sheets.
_lars = [["Resource", "Grade"], ["Lab kit", 5], ["Quiz", 6]]
_renamed = (sheet("LARS Resources", _lars), sheet("LARS Resources (Backup)", _lars),
            sheet("LARS Resources (Offline)", [["Offline"], ["Poster"]]))
case("0cecd4f3", _renamed,
     wrong={"no-space": (_renamed[0], sheet("LARS Resources(Backup)", _lars), _renamed[2]),
            "copy-last": (_renamed[0], _renamed[2], _renamed[1])})

# Merged headers in a new sheet.
_investment = sheet("Sheet1", [["Rate", "Years", "Future Value"], [0.05, 10, 1628.89]])
_summary = sheet("Sheet2", [["Investment Summary"], ["High Interest Rate", None, "Low Interest Rate"]],
                 merges=["A1:C1", "A2:B2", "C2:D2"])
case("1d17d234", (_investment, _summary), libreoffice=True,
     wrong={"too-wide": (_investment, restyle((_summary,), merges=("A1:D1", "A2:B2", "C2:D2"))[0]),
            "unmerged": (_investment, restyle((_summary,), merges=())[0])})

# Ages from birthdays.
_ages = [["Name", "Birthday", "Age"], ["Ann", datetime.datetime(1990, 5, 17), 34],
         ["Bob", datetime.datetime(1985, 11, 2), 39]]
case("4e6fcf72", (sheet("Sheet1", _ages, formats=[("B2", "YYYY-MM-DD"), ("B3", "YYYY-MM-DD")]),),
     wrong={"fractional": edit((sheet("Sheet1", _ages),), {"C2": 34.4, "C3": 38.9})})

# Fill blanks with the value above.
_levels = [["Student", "Level"], ["Ann", "A1"], ["Bob", "A1"], ["Cid", "B2"], ["Dee", "B2"]]
case("01b269ae", (sheet("Sheet1", _levels),), wrong={"blank-left": edit((sheet("Sheet1", _levels),), {"B3": None})})

# Millions / billions text: sheet_print with ignore_case.
_parameters = [["Parameter", "Millions", "Billions"], [1234567, "1.2 M", "0.0 B"], [987654321, "987.7 M", "1.0 B"]]
case("21df9241", (sheet("Sheet1", _parameters),),
     wrong={"no-space": edit((sheet("Sheet1", _parameters),), {"B2": "1.2M"}),
            "rounded-down": edit((sheet("Sheet1", _parameters),), {"B3": "987.6 M"})},
     lowercase=(edit((sheet("Sheet1", _parameters),), {"B2": "1.2 m", "C3": "1.0 b"}), 1.0))

# Clean movie titles.
_titles = [["Garbage Movie Titles", "Clean Movie Titles"], ["  the GODFATHER ", "The Godfather"],
           ["star  wars", "Star Wars"]]
case("a9f325aa", (sheet("Sheet1", _titles),), wrong={"lower-words": edit((sheet("Sheet1", _titles),),
                                                                         {"B2": "The godfather"})})

# Two decimals in column "spent": sheet_print.
_spent = [["Item", "spent"], ["tea", 3.5], ["cake", 12], ["taxi", 7.25]]
case("6e99a1ad", (sheet("Sheet1", _spent, formats=[(f"B{i}", "0.00") for i in range(2, 5)]),),
     wrong={"general": (sheet("Sheet1", _spent),),
            "rounded": (sheet("Sheet1", _spent, formats=[(f"B{i}", "0") for i in range(2, 5)]),)})

# Reorder columns.
_order = [["Date", "First Name", "Last Name", "Order ID", "Sales"], ["2024-01-02", "Ann", "Lee", 17, 20.5]]
case("7a4e4bc8", (sheet("Sheet1", _order),),
     wrong={"old-order": (sheet("Sheet1", [[r[3], r[0], r[1], r[2], r[4]] for r in _order]),)})

# Combined data with two decimals.
_ramp = [["Time", "Speed", "Acceleration", "Distance", "Combined Data"],
         [1, 2, 2, 1, "Time: 1.00, Speed: 2.00, Acceleration: 2.00, Distance: 1.00"],
         [2, 4, 2, 4, "Time: 2.00, Speed: 4.00, Acceleration: 2.00, Distance: 4.00"]]
case("4de54231", (sheet("Sheet1", _ramp),), wrong={"raw-numbers": edit((sheet("Sheet1", _ramp),), {
    "E2": "Time: 1, Speed: 2, Acceleration: 2, Distance: 1"})})

# Three percentage pivot tables under a styled merged title.
_survey = sheet("Sheet1", [["Sex", "Civil Status", "Education"], ["F", "Single", "College"], ["M", "Married", "HS"],
                           ["F", "Married", "College"]])
_survey_items = (("F", "M"), ("Single", "Married"), ("College", "HS"))


def _survey_pivot(field: int, location: str, show_as: str = "percentOfCol") -> Pivot:
    return Pivot("Sheet1", "A1:C4", ("Sex", "Civil Status", "Education"), _survey_items, rows=(field,),
                 data=((field, "count", show_as),), location=location, name=f"DataPilot{field + 1}")


def _demographic(show_as: str = "percentOfCol", font: str = "FFFFFFFF") -> tuple:  # type: ignore[type-arg]
    return (_survey, sheet("Sheet2", [["Demographic Profile"]], merges=["A1:C1"], fills=[("A1", "FF0000FF")],
                           fonts=[("A1", font, True)],
                           pivots=[_survey_pivot(0, "A3:B6", show_as), _survey_pivot(1, "A8:B11", show_as),
                                   _survey_pivot(2, "A13:B16", show_as)]))


# LibreOffice's import drops an OpenPyXL-written showDataAs, so its copies of "counts" pass.
case("30e3e107", _demographic(), libreoffice=True, wrong={"black-text": _demographic(font="FF000000")},
     counts=(_demographic(show_as="normal"), (0.0, 1.0)))

# Maturity dates.
_loans = [["Loan", "Start", "Months", "Maturity Date"], ["L1", datetime.datetime(2024, 1, 15), 12,
                                                         datetime.datetime(2025, 1, 15)],
          ["L2", datetime.datetime(2023, 6, 1), 24, datetime.datetime(2025, 6, 1)]]
case("4172ea6e", (sheet("Sheet1", _loans),), libreoffice=True,
     wrong={"as-text": edit((sheet("Sheet1", _loans),), {"D2": "2025-01-15", "D3": "2025-06-01"})})

# Zoom out below 260 % (no LibreOffice copies: a headless conversion drops the view settings).
_big = [["Name", "Qty"], ["bolts", 40]]
case("1334ca3e", (sheet("Sheet1", _big, zoom=400),), right=(sheet("Sheet1", _big, zoom=100),),
     wrong={"unchanged": (sheet("Sheet1", _big, zoom=400),), "edited": (sheet("Sheet1", [_big[0], ["nuts", 40]],
                                                                               zoom=100),)})

# Sort by date time and a line chart.
_stock = [["Date Time", "Quantity"], [datetime.datetime(2024, 1, 1, 9), 5], [datetime.datetime(2024, 1, 1, 12), 8],
          [datetime.datetime(2024, 1, 2, 9), 3]]
_stock_chart = [Chart("line", (2, 1, 2, 4), (1, 2, 1, 4), anchor="D2")]
case("3a7c8185", (sheet("Sheet1", _stock, charts=_stock_chart),), libreoffice=True,
     wrong={"unsorted": (sheet("Sheet1", [_stock[0], _stock[2], _stock[1], _stock[3]], charts=_stock_chart),),
            "bar": (sheet("Sheet1", _stock, charts=[Chart("col", (2, 1, 2, 4), (1, 2, 1, 4), anchor="D2")]),)})

# Period rate with the maximum in green font.
_rates = [["Period", "Start", "End", "Period Rate (%)"], ["P1", 100, 110, 10.0], ["P2", 110, 132, 20.0],
          ["P3", 132, 145.2, 10.0]]
_rate_sheet = sheet("Sheet1", _rates, fonts=[("D3", "FF00FF00", False)])
case("21ab7b40", (_rate_sheet,), libreoffice=True,
     wrong={"first-row": (restyle((_rate_sheet,), fonts=(("D2", "FF00FF00", False),))[0],),
            "text-rates": edit((_rate_sheet,), {"D2": "10%", "D3": "20%", "D4": "10%"})},
     conditional=((restyle((_rate_sheet,), fonts=(), conditionals=(
         Conditional("D2:D4", "cellIs", ("MAX($D$2:$D$4)",), operator="equal", font="FF00FF00"),))[0],), (0.0, 0.0)))

# A number with two decimals inside a text (sheet_print).
_decimals = [["Value", "Text"], [3.14159, "The value is 3.14"]]
case("4f07fbe9", (sheet("Sheet1", _decimals, formats=[("A2", "0.00")]),),
     wrong={"raw-value": edit((sheet("Sheet1", _decimals, formats=[("A2", "0.00")]),), {"B2": "The value is 3.14159"})},
     value_rounded=((sheet("Sheet1", [_decimals[0], [3.14, "The value is 3.14"]]),), 1.0))  # prints the same

# Pad old ids to seven digits (sheet_print: text or a "0000000" format both print 0001234).
_ids = [["Old ID", "New 7 Digit Id"], [1234, "0001234"], [56789, "0056789"]]
case("0bf05a7d", (sheet("Sheet1", _ids),),
     wrong={"unpadded": edit((sheet("Sheet1", _ids),), {"B2": 1234, "B3": 56789}),
            "six-digits": edit((sheet("Sheet1", _ids),), {"B2": "001234", "B3": "056789"})},
     number_format=(edit((sheet("Sheet1", _ids, formats=[("B2", "0000000"), ("B3", "0000000")]),),
                         {"B2": 1234, "B3": 56789}), 1.0))
