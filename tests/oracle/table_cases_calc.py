"""`compare_table` fixtures of the libreoffice_calc tasks 1/2 (see `table_cases`): each expected
workbook is what the task's instruction asks for, each wrong result a realistic agent mistake."""

from __future__ import annotations

from tests.oracle.table_cases import case
from tests.oracle.workbooks import Chart, Pivot, edit, restyle, sheet

# 357ef137: total hours (a time) times an hourly rate; only E3 is checked (no expected file).
_hours = (sheet("Sheet1", [["Day", "Hours", None, "Item", "Value"], ["Mon", 0.125, None, "Total hours", 0.3993055556],
                           ["Tue", 0.1180555556, None, "Total earned", None],
                           ["Wed", 0.15625, None, "Hourly rate", 20]],
                formats=[("B2", "[HH]:MM"), ("B3", "[HH]:MM"), ("B4", "[HH]:MM"), ("E2", "[HH]:MM")]),)
case("357ef137", None, right=edit(_hours, {"E3": 191.66666672}), libreoffice=True,
     wrong={"plain-product": edit(_hours, {"E3": 7.986111112}), "blank": _hours},
     formula=(edit(_hours, {"E3": "=E2*24*E4"}), (0.0, 1.0)))

# NetIncome: monthly revenue and expenses.
_net = sheet("Sheet1", [["Month", "Revenue", "Total Expenses", "Net Income"], ["Jan", 5000, 3200, 1800],
                        ["Feb", 6200, 3900, 2300], ["Mar", 5800, 4100, 1700]])
case("42e0a640", (_net, sheet("Sheet2", [["Total Revenue", "Total Expenses"], [17000, 11200]])),
     wrong={"swapped": (_net, sheet("Sheet2", [["Total Revenue", "Total Expenses"], [11200, 17000]])),
            "no-sheet2": (_net,)})
case("1273e544", (_net, sheet("Sheet2", [["Revenue"], [5000], [6200], [5800]])),
     wrong={"no-header": (_net, sheet("Sheet2", [[5000], [6200], [5800]])),
            "net-income": (_net, sheet("Sheet2", [["Net Income"], [1800], [2300], [1700]]))})

# BoomerangSales: revenue column, then a pivot table of revenue per product.
_sales_rows = [["Product", "Quantity", "Price", "Discount", "Revenue"], ["Boomerang A", 3, 10, 0.1, 27],
               ["Boomerang B", 2, 15, 0, 30], ["Boomerang A", 1, 10, 0, 10], ["Boomerang C", 4, 12, 0.25, 36]]
_products = ("Boomerang A", "Boomerang B", "Boomerang C")


def _sales_pivot(rows: tuple[int, ...] = (0,), cols: tuple[int, ...] = (), subtotal: str = "sum",
                 field: int = 4) -> Pivot:
    return Pivot("Sheet1", "A1:E5", ("Product", "Quantity", "Price", "Discount", "Revenue"),
                 (_products, (), (), (), ()), rows=rows, cols=cols, data=((field, subtotal, "normal"),))


_sales = sheet("Sheet1", _sales_rows)
case("51719eea", (_sales, sheet("Sheet2", [[]], pivots=[_sales_pivot()])), libreoffice=True,
     wrong={"count": (_sales, sheet("Sheet2", [[]], pivots=[_sales_pivot(subtotal="count")])),
            "quantity": (_sales, sheet("Sheet2", [[]], pivots=[_sales_pivot(field=1)]))})

# Invoices: count of each invoice number.
_invoices = sheet("Sheet1", [["Invoice No.", "Customer", "Amount"], ["INV-1", "Ann", 20], ["INV-2", "Bob", 35],
                             ["INV-1", "Ann", 12], ["INV-3", "Cid", 8]])
_invoice_items = (("INV-1", "INV-2", "INV-3"), ("Ann", "Bob", "Cid"), ())


def _invoice_pivot(field: int = 0, subtotal: str = "count") -> Pivot:
    return Pivot("Sheet1", "A1:C5", ("Invoice No.", "Customer", "Amount"), _invoice_items, rows=(0,),
                 data=((field, subtotal, "normal"),))


case("1954cced", (_invoices, sheet("Sheet2", [[]], pivots=[_invoice_pivot()])), libreoffice=True,
     wrong={"sum-amount": (_invoices, sheet("Sheet2", [[]], pivots=[_invoice_pivot(2, "sum")]))})

# WeeklySales: Sales and COGS per week.
_weekly_rows = [["Week", "Sales", "COGS"], ["W1", 1200, 700], ["W2", 1350, 760], ["W3", 990, 600], ["W4", 1500, 820]]
_weekly = sheet("Sheet1", _weekly_rows)
_sales_cogs = Chart("col", (2, 1, 3, 5), (1, 2, 1, 5), "Sales & COGS", "A1", source="Sheet1")
case("12382c62", (_weekly, sheet("Sheet2", [[]], charts=[_sales_cogs])), libreoffice=True,
     wrong={"line": (_weekly, sheet("Sheet2", [[]], charts=[Chart("line", (2, 1, 3, 5), (1, 2, 1, 5), "Sales & COGS",
                                                                   "A1", source="Sheet1")])),
            "title": (_weekly, sheet("Sheet2", [[]], charts=[Chart("col", (2, 1, 3, 5), (1, 2, 1, 5), "Sales and COGS",
                                                                   "A1", source="Sheet1")]))})
case("1e8df695", (sheet("Sheet1", [[*row, "Profit" if i == 0 else row[1] - row[2]]
                                   for i, row in enumerate(_weekly_rows)]),),
     wrong={"reversed": (sheet("Sheet1", [[*row, "Profit" if i == 0 else row[2] - row[1]]
                                          for i, row in enumerate(_weekly_rows)]),),
            "far-column": (sheet("Sheet1", [[*row, None, "Profit" if i == 0 else row[1] - row[2]]
                                            for i, row in enumerate(_weekly_rows)]),)})

# Quarterly sales by zone with totals.
_zones = [["Zone", "Q1", "Q2", "Q3", "Q4", "Total"], ["North", 10, 12, 9, 14, 45], ["South", 8, 7, 11, 6, 32],
          ["Total", 18, 19, 20, 20, 77]]
case("f9584479", (sheet("Sheet1", _zones),), wrong={"row-missing": (sheet("Sheet1", _zones[:3]),),
                                                     "bad-total": edit((sheet("Sheet1", _zones),), {"F4": 76})})

# Two pivot tables: revenue per product and per sales channel.
_channels = sheet("Sheet1", [["Product", "Channel", "Revenue"], ["Tee", "Online", 120], ["Cap", "Store", 80],
                             ["Tee", "Store", 60], ["Bag", "Online", 150]])
_channel_items = (("Tee", "Cap", "Bag"), ("Online", "Store"), ())


def _channel_pivot(field: int, location: str) -> Pivot:
    return Pivot("Sheet1", "A1:C5", ("Product", "Channel", "Revenue"), _channel_items, rows=(field,),
                 data=((2, "sum", "normal"),), location=location, name=f"DataPilot{field + 1}")


case("535364ea", (_channels, sheet("Sheet2", [[]], pivots=[_channel_pivot(0, "A1:B5"), _channel_pivot(1, "D1:E4")])),
     libreoffice=True, wrong={"one-pivot": (_channels, sheet("Sheet2", [[]], pivots=[_channel_pivot(0, "A1:B5")]))})

# VLOOKUP: officers per branch.
_lookup = [["Branch", "Officer", None, "Head Office", "Officer"], ["Delhi", "Ravi", None, "Pune", "Meera"],
           ["Pune", "Meera", None, "Delhi", "Ravi"], ["Goa", "Tom", None, "Goa", "Tom"]]
case("7e429b8d", (sheet("Sheet1", _lookup),), wrong={"shifted": edit((sheet("Sheet1", _lookup),), {"E2": "Ravi"}),
                                                      "unfilled": edit((sheet("Sheet1", _lookup),), {"E4": None})})

# Balance sheet: percentage annual changes in a new sheet.
_assets = sheet("Sheet1", [["Year", "Current Assets", "Fixed Assets", "Other Assets"], [2014, 100, 200, 50],
                           [2015, 112.5, 210, 40], [2016, 123.75, 189, 60]])
_changes = [["Year", "CA changes", "FA changes", "OA changes"], [2015, 12.5, 5.0, -20.0], [2016, 10.0, -10.0, 50.0]]
case("04d9aeaf", (_assets, sheet("Sheet2", _changes)), libreoffice=True,
     wrong={"ratios": (_assets, sheet("Sheet2", [_changes[0], [2015, 0.125, 0.05, -0.2], [2016, 0.1, -0.1, 0.5]])),
            "headers": (_assets, sheet("Sheet2", [["Year", "CA", "FA", "OA"], *_changes[1:]])),
            "float-ints": (_assets, sheet("Sheet2", [_changes[0], [2015, 12.5, 5.5, -20.0],
                                                     [2016, 10.0, -10.0, 50.0]]))},
     rounding=((_assets, sheet("Sheet2", [_changes[0], [2015, 12.50001, 5.0, -20.0], [2016, 10.0, -10.0, 50.0]])), 1.0))

# Hide the rows with N/A.
_budget_rows = [["Date", "Budget", "Actual", "Variance"], ["2024-01", 100, 90, 10], ["2024-02", "N/A", "N/A", "N/A"],
                ["2024-03", 120, 130, -10], ["2024-04", "N/A", "N/A", "N/A"]]
_budget = (sheet("Sheet1", _budget_rows, hidden_rows=[3, 5]),)
case("6054afcb", _budget, libreoffice=True,
     wrong={"one-hidden": restyle(_budget, hidden_rows=(3,)),
            "deleted": (sheet("Sheet1", [r for r in _budget_rows if r[1] != "N/A"]),)})

# Unique names in first-occurrence order.
_names = ["Ann", "Bob", "Ann", "Cid", "Bob", "Dee"]
_unique = [["Names with duplicates", None, "Unique Names"]] + [
    [n, None, u] for n, u in zip(_names, ["Ann", "Bob", "Cid", "Dee", None, None], strict=True)]
case("abed40dc", (sheet("Sheet1", _unique),),
     wrong={"sorted-desc": edit((sheet("Sheet1", _unique),), {"C2": "Dee", "C5": "Ann"}),
            "with-duplicates": edit((sheet("Sheet1", _unique),), {"C4": "Ann", "C5": "Cid", "C6": "Bob"})})

# Split "First Last - Rank" into three columns.
_people = [["Info", "First Name", "Last Name", "Rank"], ["John Smith - Captain", "John", "Smith", "Captain"],
           ["Ana Lopez - Major", "Ana", "Lopez", "Major"]]
case("37608790", (sheet("Sheet1", _people),),
     wrong={"trailing-space": edit((sheet("Sheet1", _people),), {"D2": " Captain"}),
            "original-changed": edit((sheet("Sheet1", _people),), {"A2": "John"})})

# Monthly totals in a new sheet.
_reps = sheet("Sheet1", [["Rep", "Jan", "Feb", "Mar"], ["Kim", 10, 20, 30], ["Lee", 5, 15, 25]])
case("26a8440e", (_reps, sheet("Sheet2", [["Month", "Total"], ["Jan", 15], ["Feb", 35], ["Mar", 55]])),
     wrong={"by-rep": (_reps, sheet("Sheet2", [["Month", "Total"], ["Kim", 60], ["Lee", 45]])),
            "lowercase-header": (_reps, sheet("Sheet2", [["month", "total"], ["Jan", 15], ["Feb", 35], ["Mar", 55]]))})

# Grades from a scale table.
_grades = [["Min", "Grade"], [0, "F"], [50, "C"], [70, "B"], [85, "A"], [None, None], ["Student", "Score", "Grade"],
           ["Amy", 91, "A"], ["Ben", 67, "C"], ["Cal", 49, "F"]]
case("d681960f", (sheet("Sheet1", _grades),), wrong={"off-by-one": edit((sheet("Sheet1", _grades),), {"C9": "B"})})

# Gross profit, then "Year_Profit" in a new sheet.
_income = sheet("Sheet1", [["Year", "Sales", "Returns", "Expenses", "Gross Profit"], [2019, 1000, 50, 400.5, 549.5],
                           [2020, 1200, 20, 610.25, 569.75]])
case("035f41ba", (_income, sheet("Sheet2", [["Year_Profit"], ["2019_549"], ["2020_569"]])),
     wrong={"decimals": (_income, sheet("Sheet2", [["Year_Profit"], ["2019_549.5"], ["2020_569.75"]])),
            "gross-wrong": (edit((_income,), {"E2": 599.5})[0], sheet("Sheet2", [["Year_Profit"], ["2019_549"],
                                                                                  ["2020_569"]]))})

# "No. #" sequence numbers.
_orders = [["Seq No.", "Order", "Amount"], ["No. 1", "A-17", 20], ["No. 2", "A-18", 35], ["No. 3", "A-19", 12]]
case("7efeb4b1", (sheet("Sheet1", _orders),), wrong={"no-space": edit((sheet("Sheet1", _orders),), {"B2": "A-17",
                                                                                                      "A2": "No.1"})})

# Pivot with the promotion names as column headers.
_promos = sheet("Sheet1", [["Promotion", "Region", "Revenue"], ["BOGO", "East", 300], ["Flash", "West", 120],
                           ["BOGO", "West", 80]])


def _promo_pivot(rows: tuple[int, ...], cols: tuple[int, ...]) -> Pivot:
    return Pivot("Sheet1", "A1:C4", ("Promotion", "Region", "Revenue"), (("BOGO", "Flash"), ("East", "West"), ()),
                 rows=rows, cols=cols, data=((2, "sum", "normal"),))


case("1de60575", (_promos, sheet("Sheet2", [[]], pivots=[_promo_pivot((), (0,))])), libreoffice=True,
     wrong={"as-rows": (_promos, sheet("Sheet2", [[]], pivots=[_promo_pivot((0,), ())]))})

# Sort by amount, ascending.
_records = [["Item", "Amount"], ["pen", 2], ["book", 15], ["bag", 30]]
case("51b11269", (sheet("Sheet1", _records),),
     wrong={"descending": (sheet("Sheet1", [_records[0], *reversed(_records[1:])]),)})
