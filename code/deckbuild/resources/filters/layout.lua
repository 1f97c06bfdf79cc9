-- deckbuild: Quarto's layout markup for revealjs (https://quarto.org/docs/authoring/figures.html#complex-layouts,
-- https://quarto.org/docs/presentations/revealjs/advanced.html#absolute-position).
--
--   ![](x.png){.absolute top=50 left="10%" width=200}    position attributes become the
--       element's style (numbers in px), on images, divs and spans of class .absolute
--       (quarto-cli src/resources/filters/quarto-post/reveal.lua, applyPosition)
--   ::: {layout-ncol=2} / {layout-nrow=2} / {layout="[[1,1],[1]]"} ... :::
--       the div's blocks laid out in rows (src/resources/filters/layout/layout.lua,
--       width.lua, html.lua):
--       <div class="quarto-layout-panel" ...>
--         <div class="quarto-layout-row [quarto-layout-valign-X]">
--           <div class="quarto-layout-cell" style="flex-basis: 50.0%;justify-content: center;">
--       A cell's width comes from the layout (or its image's percent width); a cell holding
--       an image or a table is centred, others left (layout-align changes it); a heading
--       opens the next cell in bold; a negative width in `layout` is an empty spacer.
--   : Caption {tbl-colwidths="[25,75]"}    a table's column widths in percent (the last
--       repeats; a total over 100 is scaled down), src/resources/filters/modules/
--       tablecolwidths.lua; "false" leaves the widths to the browser; a table's short
--       Bootstrap classes get their prefix ({.striped} is table-striped)
--   ```{.python filename="app.py"}   the code under a header naming the file
--       (src/resources/filters/customnodes/decoratedcodeblock.lua): <div class=
--       "code-with-filename"><div class="code-with-filename-file"><pre><strong>app.py
--       </strong></pre></div> code </div>

local POSITION = { "top", "left", "bottom", "right", "width", "height" }

local function css_size(value)
  local n = tonumber(value)
  return n and (tostring(n) .. "px") or value
end

local function position(el)
  if not el.classes:includes("absolute") then return nil end
  local style = el.attributes["style"] or ""
  for _, name in ipairs(POSITION) do
    local value = el.attributes[name]
    if value ~= nil then
      style = style .. name .. ": " .. css_size(value) .. "; "
      el.attributes[name] = nil
    end
  end
  el.attributes["style"] = style
  return el
end

-- Quarto's round(x, n): half away from zero
local function round(x, n)
  local f = 10 ^ (n or 0)
  x = x * f
  x = x >= 0 and math.floor(x + 0.5) or math.ceil(x - 0.5)
  return x / f
end

local function percent(size)
  local p = size and tostring(size):match("^([%d%.]+)%%$")
  return p and tonumber(p) or nil
end

-- the image of a cell's figure (a paragraph or pandoc figure holding one image)
local function cell_image(cell)
  for _, block in ipairs(cell.content) do
    local inlines = (block.t == "Para" or block.t == "Plain") and block.content
    if block.t == "Figure" and #block.content == 1 and block.content[1].t == "Plain" then
      inlines = block.content[1].content
    end
    if inlines and #inlines == 1 then
      local el = inlines[1]
      if el.t == "Link" and #el.content == 1 then el = el.content[1] end
      if el.t == "Image" then return el end
    end
  end
  return nil
end

local function has_table(cell)
  local found = false
  cell:walk({ Table = function() found = true end })
  return found
end

-- the div's blocks as cells: code echoed by a cell goes before the panel; a heading is
-- put, in bold, at the top of the next cell; a display output is unrolled
local function partition(div)
  local preamble, cells, heading = pandoc.Blocks({}), pandoc.List({}), nil
  for _, block in ipairs(div.content) do
    if block.t == "CodeBlock" and block.classes:includes("cell-code") then
      preamble:insert(block)
    elseif block.t == "Header" then
      heading = pandoc.Para({ pandoc.Strong(block.content) })
    else
      local cell = block.t == "Div" and block or pandoc.Div({ block })
      local img = cell_image(cell)
      if img then
        cell.attributes["width"] = img.attributes["width"]
        if percent(img.attributes["width"]) then img.attributes["width"] = nil end
        img.attributes["height"] = nil
      end
      if heading then cell.content:insert(1, heading); heading = nil end
      if cell.classes:includes("cell-output-display") then
        for _, out in ipairs(cell.content) do
          cells:insert(out.t == "Div" and out or pandoc.Div({ out }))
        end
      else
        cells:insert(cell)
      end
    end
  end
  return preamble, cells
end

-- layout="[[40,60],[100]]": rows of widths; numbers are shares of their row (or, alone
-- at <= 1, fractions), negative ones spacers; rows repeat the last one for more cells
local function parse_layout(spec, count)
  local ok, rows = pcall(function() return pandoc.json.decode(spec, false) end)
  if not ok or type(rows) ~= "table" or #rows == 0 then return nil end
  if type(rows[1]) ~= "table" then rows = { rows } end
  local out, placed = {}, 0
  for _, row in ipairs(rows) do
    local total = 0
    for _, w in ipairs(row) do
      if type(w) ~= "number" then total = 0; break end
      total = total + math.abs(w)
    end
    local widths = {}
    for _, w in ipairs(row) do
      if type(w) == "number" then
        w = (total ~= 0 and round(w / total * 100, 2)) or (w <= 1 and round(w * 100, 2)) or w
        w = tostring(w) .. "%"
      end
      if tostring(w):sub(1, 1) == "-" then count = count + 1 end
      placed = placed + 1
      table.insert(widths, tostring(w))
    end
    table.insert(out, widths)
  end
  for _ = 1, math.ceil(math.max(0, count - placed) / #out[#out]) do
    table.insert(out, out[#out])
  end
  return out
end

local function spacer(width)
  return pandoc.Div({ pandoc.Para({ pandoc.Str("\u{a0}") }), pandoc.Para({}) },
    pandoc.Attr("", { "quarto-figure-spacer" }, { width = width:sub(2) }))
end

local function rows_from_layout(spec, cells)
  local rows, next_cell = {}, 1
  for _, widths in ipairs(parse_layout(spec, #cells) or {}) do
    if next_cell > #cells then break end
    local row = {}
    for _, w in ipairs(widths) do
      if w:sub(1, 1) == "-" then
        table.insert(row, spacer(w))
      elseif cells[next_cell] then
        cells[next_cell].attributes["width"] = w
        cells[next_cell].attributes["height"] = nil
        table.insert(row, cells[next_cell])
        next_cell = next_cell + 1
      end
    end
    table.insert(rows, row)
  end
  return rows
end

-- layout-ncol / layout-nrow: cells in rows of ncol, widths in proportion to the cells'
-- own numeric widths (42 for those without one)
local function rows_from_columns(ncol, cells)
  local rows = {}
  for i, cell in ipairs(cells) do
    if (i - 1) % ncol == 0 then table.insert(rows, {}) end
    table.insert(rows[#rows], cell)
  end
  for _, row in ipairs(rows) do
    local widths, default, total = {}, nil, 0
    for i, cell in ipairs(row) do
      widths[i] = tonumber(tostring(cell.attributes["width"] or ""):match("^(-?[%d%.]+)")) or 0
      if widths[i] > 0 and not default then default = widths[i] end
    end
    for i = 1, ncol do
      if not widths[i] or widths[i] == 0 then widths[i] = default or 42 end
      total = total + widths[i]
    end
    for i, cell in ipairs(row) do
      cell.attributes["width"] = tostring(round(widths[i] / total * 100, 1)) .. "%"
      cell.attributes["height"] = nil
    end
  end
  return rows
end

local FLEX = { left = "flex-start", center = "center", right = "flex-end" }

local function render_cell(cell, align)
  local width = cell.attributes["width"]
  local p = percent(width)
  if p then width = tostring(round(p, 1)) .. "%" end
  local own = align or ((cell_image(cell) or has_table(cell)) and "center" or "left")
  cell.attributes["width"] = nil
  cell.attributes["layout-align"] = nil
  cell.classes:insert("quarto-layout-cell")
  cell.attributes["style"] = "flex-basis: " .. tostring(width) .. ";justify-content: "
    .. (FLEX[own] or "flex-start") .. ";"
  return cell
end

local function panel(div)
  local a = div.attributes
  if not (a["layout"] or a["layout-ncol"] or a["layout-nrow"]) then return nil end
  local nested = false
  div:walk({ Div = function(d) nested = nested or d.classes:includes("quarto-layout-panel") end })
  if nested or div.classes:includes("quarto-layout-panel") then return nil end
  local preamble, cells = partition(div)
  local ncol, nrow = tonumber(a["layout-ncol"]), tonumber(a["layout-nrow"])
  if not ncol and nrow then ncol = math.ceil(#cells / nrow) end
  local rows = (a["layout"] and not ncol) and rows_from_layout(a["layout"], cells)
    or rows_from_columns(ncol or 1, cells)
  local align, valign = a["layout-align"], a["layout-valign"]
  local out = pandoc.Blocks({})
  for _, row in ipairs(rows) do
    local classes = { "quarto-layout-row" }
    if valign then table.insert(classes, "quarto-layout-valign-" .. valign) end
    local rendered = pandoc.Blocks({})
    for _, cell in ipairs(row) do rendered:insert(render_cell(cell, align)) end
    out:insert(pandoc.Div(rendered, pandoc.Attr("", classes)))
  end
  for _, key in ipairs({ "layout-align", "layout-valign" }) do a[key] = nil end
  div.classes:insert("quarto-layout-panel")
  div.content = out
  if #preamble == 0 then return div end
  preamble:insert(div)
  return preamble
end

-- Bootstrap's table class names, written short: {.striped .hover} is table-striped...
-- (src/resources/filters/quarto-pre/table-classes.lua)
local BOOTSTRAP_TABLE = {}
for _, name in ipairs({ "primary", "secondary", "success", "danger", "warning", "info", "light",
    "dark", "striped", "hover", "active", "bordered", "borderless", "sm", "responsive",
    "responsive-sm", "responsive-md", "responsive-lg", "responsive-xl", "responsive-xxl" }) do
  BOOTSTRAP_TABLE[name] = true
end

local function table_classes(tbl)
  tbl.classes = tbl.classes:map(function(c) return BOOTSTRAP_TABLE[c] and ("table-" .. c) or c end)
  if tbl.classes:includes("table-sm") then tbl.classes:insert("small")
  elseif tbl.classes:includes("small") then tbl.classes:insert("table-sm") end
end

local function colwidths(tbl)
  table_classes(tbl)
  local spec = tbl.attributes["tbl-colwidths"]
  if spec == nil then return tbl end
  tbl.attributes["tbl-colwidths"] = nil
  local n, widths = #tbl.colspecs, {}
  if spec == "false" then
    for i = 1, n do widths[i] = 0 end
  elseif spec ~= "true" then
    if spec:sub(1, 1) ~= "[" then spec = "[" .. spec .. "]" end
    local ok, list = pcall(function() return pandoc.json.decode(spec, false) end)
    if not ok or type(list) ~= "table" or #list == 0 then return tbl end
    local total = 0
    for i = 1, n do
      widths[i] = tonumber(list[math.min(i, #list)]) or 0
      total = total + widths[i]
    end
    for i = 1, n do
      local w = total > 100 and round(widths[i] / total * 100, 1) or widths[i]
      widths[i] = round(w / 100, 2)
    end
  else
    return tbl
  end
  for i = 1, n do tbl.colspecs[i] = { tbl.colspecs[i][1], widths[i] } end
  return tbl
end

local function filename(block)
  local name = block.attributes["filename"]
  if name == nil then return nil end
  local header = pandoc.Div({ pandoc.Plain({
    pandoc.RawInline("html", "<pre>"), pandoc.Strong({ pandoc.Str(name) }), pandoc.RawInline("html", "</pre>"),
  }) }, pandoc.Attr("", { "code-with-filename-file" }))
  return pandoc.Div({ header, block }, pandoc.Attr("", { "code-with-filename" }))
end

return {
  { Div = panel, Table = colwidths, CodeBlock = filename },
  { Div = position, Span = position, Image = position },
}
