-- deckbuild: run just before pandoc's citeproc (only when the deck names a bibliography).
-- A citation whose keys all carry a Quarto cross-reference prefix (@sec-intro, @eq-x,
-- @tbl-y...) is a cross-reference, which Quarto resolves before citeproc runs: citeproc
-- must not treat it as a missing reference (a warning, and "(sec-intro?)" printed).
-- figures.lua has already resolved @fig- references; the others are kept as pandoc
-- writes an unprocessed citation (its text, in span.citation), as without a bibliography.

-- Quarto's cross-reference kinds (crossref/refs.lua valid_ref_types: its float and
-- callout categories, its theorem kinds, eq and sec)
local PREFIXES = {
  "fig", "tbl", "lst", "nte", "wrn", "cau", "tip", "imp", "prf", "rem", "sol",
  "thm", "lem", "cor", "prp", "cnj", "def", "exm", "exr", "alg", "eq", "sec",
}
local IS_PREFIX = {}
for _, p in ipairs(PREFIXES) do IS_PREFIX[p] = true end

local function is_crossref(id)
  local prefix = id:match("^(%a+)%-")
  return prefix ~= nil and IS_PREFIX[prefix:lower()] == true
end

function Cite(el)
  local ids = {}
  for _, c in ipairs(el.citations) do
    if not is_crossref(c.id) then return nil end
    table.insert(ids, c.id)
  end
  return pandoc.Span(el.content, pandoc.Attr("", { "citation" },
    { { "data-cites", table.concat(ids, " ") } }))
end
