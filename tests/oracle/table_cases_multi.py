"""`compare_table` fixtures of the multi_apps tasks (see `table_cases`)."""

from __future__ import annotations

from tests.oracle.table_cases import case
from tests.oracle.workbooks import edit, sheet

# Thunderbird contacts converted to xlsx.
_contacts = [["First Name", "Last Name", "Display Name", "Primary Email"], ["Ann", "Lee", "Ann Lee", "ann@ex.org"],
             ["Bob", "Ray", "Bob Ray", "bob@ex.org"]]
case("c867c42d", (sheet("contacts", _contacts),),
     wrong={"no-header": (sheet("contacts", _contacts[1:]),), "one-contact": (sheet("contacts", _contacts[:2]),)})

# Report of the latest five emails.
_report = [["sender_name", "sender_address", "subject", "CC", "number_of_attachments"],
           *[[f"User {i}", f"u{i}@ex.org", f"Daily {i}", None if i % 2 else "cc@ex.org", i % 3] for i in range(1, 6)]]
# pandas (read_excel) reads a number stored as text as a number: "count-as-text" passes.
case("d9b7c649", (sheet("Sheet1", _report),),
     wrong={"newest-first": (sheet("Sheet1", [_report[0], *reversed(_report[1:])]),),
            "no-cc": edit((sheet("Sheet1", _report),), {"D3": None})},
     count_as_text=(edit((sheet("Sheet1", _report),), {"E2": "1"}), 1.0))

# Assignment workbook with eight sheets.
_assignment = tuple(sheet(name, [["id", "value"], [1, i * 10], [2, i * 10 + 5]])
                    for i, name in enumerate(["Customers", "Orders", "Products", "Suppliers", "Summary", "Q1", "Q2",
                                              "Notes"]))
case("bc2b57f3", _assignment,
     wrong={"renamed": (sheet("customers", _assignment[0].rows), *_assignment[1:]),
            "summary-wrong": (*_assignment[:4], sheet("Summary", [["id", "value"], [1, 0], [2, 45]]),
                              *_assignment[5:])})

# First authors: fuzzy headers, trimmed exact names and e-mails, case-insensitive affiliations.
_authors = [["Name", "Email", "Affiliation"], ["Alice Zhang", "alice@uni.edu", "MIT"],
            ["Bob Chen", "bob@lab.org", "Stanford University"], ["Carla Diaz", "carla@ex.com", "ETH Zurich"],
            ["Dan Wu", "dan@hku.hk", "HKU"]]
# OpenPyXL writes " Alice Zhang " as an inline string with xml:space="preserve", which OSWorld's
# cell reader returns as a dict: only the LibreOffice copy (shared strings) of "right" passes.
case("b5062e3e", (sheet("Sheet1", _authors),), libreoffice=True,
     padded=((sheet("Sheet1", [["Author Name", "E-mail / Email", "affiliation"],
                               *[[f" {a} ", b, c.upper()] for a, b, c in _authors[1:]]]),), (0.0, 1.0)),
     wrong={"unsorted": (sheet("Sheet1", [_authors[0], _authors[2], _authors[1], *_authors[3:]]),),
            "headers": (sheet("Sheet1", [["Author", "Mail", "Org"], *_authors[1:]]),)})

# Professors' emails.
_professors = [["Name", "Homepage", "Email"], ["Prof. A", "https://a.edu", "a@a.edu"],
               ["Prof. B", "https://b.edu", "b@b.edu"]]
case("c7c1e4c3", (sheet("Sheet1", _professors),), wrong={"typo": edit((sheet("Sheet1", _professors),),
                                                                      {"C3": "b@b.com"})})

# Restaurants: fuzzy addresses, phone numbers included after trimming.
_restaurants = [["Restaurant", "Address", "Contact Number", "Website"],
                ["Tim Ho Wan", "9-11 Fuk Wing Street, Sham Shui Po", "23322896", "timhowan.com"],
                ["Yat Lok", "34-38 Stanley Street, Central", "25243882", None],
                ["Kau Kee", "21 Gough Street, Central", "28150123", None],
                ["Mak's Noodle", "77 Wellington Street, Central", "28543810", "maks.hk"],
                ["Lan Fong Yuen", "2 Gage Street, Central", "25440012", None]]
case("d1acdb87", (sheet("Sheet1", _restaurants),),
     right=(sheet("Sheet1", [_restaurants[0], *[[a, b.replace("Street", "St"), f"+852 {c[:4]} {c[4:]}", d]
                                                for a, b, c, d in _restaurants[1:]]]),),
     wrong={"other-address": edit((sheet("Sheet1", _restaurants),), {"B3": "1 Queen's Road, Central"}),
            "no-phone": edit((sheet("Sheet1", _restaurants),), {"C4": None})})

# New foundation models: exact authors / links, fuzzy titles.
_papers = [["Title", "Authors", "Link"], *[[f"Model {i}: a foundation language model", f"Author {i}",
                                             f"https://arxiv.org/abs/2310.0{i}"] for i in range(1, 5)]]
case("deec51c9", (sheet("Sheet1", _papers),),
     right=edit((sheet("Sheet1", _papers),), {"A2": "model 1: A Foundation Language Model"}),
     wrong={"truncated": edit((sheet("Sheet1", _papers),), {"A3": "Model 2"}),
            "links": edit((sheet("Sheet1", _papers),), {"C4": "https://arxiv.org/pdf/2310.03"})})

# Bookkeeping: old rows unchanged, new rows' types, amounts and balances.
_book_rows = [["Date", "Item", "Type", "Amount", "Balance"],
              *[[f"2024-01-0{i}", f"old {i}", "Food", -10 * i, 800 - 5 * i]
                                                               for i in range(1, 8)]]
_new_rows = [["2024-02-01", "Dinner", "Food", -186.93, 603.07], ["2024-02-02", "Rent", "Housing", -3670, -3066.93],
             ["2024-02-03", "Coffee", "Food", -5.7, -3072.63], ["2024-02-04", "Shoes", "Clothing", -154.06, -3226.69],
             ["2024-02-05", "Snack", "Food", -8.1, -3234.79]]
case("8e116af7", (sheet("Sheet1", [*_book_rows, *_new_rows]),), libreoffice=True,
     right=(sheet("Sheet1", [*_book_rows, *[[a, b, c.lower(), d, e] for a, b, c, d, e in _new_rows]]),),
     wrong={"signs": (sheet("Sheet1", [*_book_rows, *[[a, b, c, -d, e] for a, b, c, d, e in _new_rows]]),),
            "old-row-edited": edit((sheet("Sheet1", [*_book_rows, *_new_rows]),), {"B2": "old one"})})

# Course timetable with the Wednesday 12 PM lecture.
_timetable = [["Time", "Mon", "Tue", "Wed"], ["10 AM", "Math", None, None], ["12 PM", None, "Art", "Lecture"],
              ["1 PM", None, None, "Lecture"]]
case("3a93cae4", (sheet("Sheet1", _timetable),),
     wrong={"eleven": edit((sheet("Sheet1", _timetable),), {"D3": None, "D4": None, "D2": "Lecture"})})

# Pass rates (sheet_print: the CSV text).
_ecs = [["School", "2021", "2022"], ["HKU", 0.3333, 0.4], ["CUHK", 0.25, 0.5]]
_pct = [(f"{c}{r}", "0.00%") for c in "BC" for r in (2, 3)]
case("881deb30", (sheet("Sheet1", _ecs, formats=_pct),),
     wrong={"fractions": (sheet("Sheet1", _ecs),), "swapped": (sheet("Sheet1", [_ecs[0], _ecs[2], _ecs[1]],
                                                                      formats=_pct),)})
_grf = [["Year", "#Applied", "#Supported", "Success Rate"], [2019, 40, 10, 0.25], [2020, 36, 12, 0.3333]]
case("7e287123", (sheet("Sheet1", _grf, formats=[("D2", "0.00%"), ("D3", "0.00%")]),),
     wrong={"no-decimals": (sheet("Sheet1", _grf, formats=[("D2", "0%"), ("D3", "0%")]),),
            "header": (sheet("Sheet1", [["Year", "Applied", "Supported", "Success Rate"], *_grf[1:]],
                             formats=[("D2", "0.00%"), ("D3", "0.00%")]),)})

# Unseen movies in a new sheet, by IMDB rank.
_movies = sheet("Sheet1", [["Rank", "Title", "Year"], [1, "The Shawshank Redemption", 1994],
                           [2, "The Godfather", 1972]])
_unseen = [["Rank", "Title", "Year"], [3, "The Dark Knight", 2008], [5, "12 Angry Men", 1957]]
case("3e3fc409", (_movies, sheet("unseen_movies", _unseen)),
     wrong={"sheet-name": (_movies, sheet("Unseen Movies", _unseen)),
            "reverse": (_movies, sheet("unseen_movies", [_unseen[0], _unseen[2], _unseen[1]]))})

# Tally book with the December AWS invoice appended.
_tally = [["Date", "Item", "Amount", "Receipt"], ["2023-11-05", "AWS", 12.5, "aws-invoice-2311.pdf"],
          ["2023-12-05", "AWS", 14.25, "aws-invoice-2312.pdf"]]
case("415ef462", (sheet("Sheet1", _tally),),
     wrong={"date": edit((sheet("Sheet1", _tally),), {"A3": "2023-12-06"}), "missing": (sheet("Sheet1", _tally[:2]),)},
     amount_as_text=(edit((sheet("Sheet1", _tally),), {"C3": "14.25"}), 1.0))  # pandas reads "14.25" as 14.25

# Multiple-choice scores.
_scores = [["Student", "Q1", "Q2", "Q3", "Total"], ["Key", "A", "C", "B", None], ["Ann", 1, 0, 1, 2],
           ["Bob", 1, 1, 1, 3]]
case("aceb0368", (sheet("Sheet1", _scores),), wrong={"total": edit((sheet("Sheet1", _scores),), {"E4": 2})})

# ACL best long papers, newest first.
_acl = [["title", "year", "author list", "PDF link"],
        *[[f"Paper {y}", y, f"A {y}, B {y}", f"https://aclanthology.org/{y}.acl-long.{y % 100}.pdf"]
          for y in (2022, 2021, 2020, 2019)]]
case("67890eb6", (sheet("Sheet1", _acl),),
     wrong={"ascending": (sheet("Sheet1", [_acl[0], *reversed(_acl[1:])]),),
            "arxiv": edit((sheet("Sheet1", _acl),), {"D2": "https://arxiv.org/abs/2203.00001"})})
