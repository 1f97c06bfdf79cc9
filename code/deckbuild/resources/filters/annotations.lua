-- deckbuild: code annotations (https://quarto.org/docs/authoring/code-annotation.html),
-- shown below the code as Quarto's default (code-annotations: below) does for revealjs:
--
--   ```python                       the markers leave the code; the block gets the id
--   x = load()  # <1>               annotated-cell-N and data-code-annotations="1:1,3:2"
--   y = x + 1                       (line:number), from which deckbuild.js puts Quarto's
--   print(y)    # <2>               numbered anchors before the marked lines;
--   ```                             the list that follows becomes
--   1. Load the data.               <dl class="code-annotation-container-grid">
--   2. Show it.                       <dt ...>1</dt><dd><span data-code-lines="1" ...>Load...
--
-- The marker is the language's line comment followed by <N> at the end of a line
-- (quarto-cli src/resources/filters/quarto-pre/code-annotation.lua); the list must follow
-- the block (or the cell holding it) directly.

local COMMENT = {
  c = { "/*", "*/" }, css = { "/*", "*/" }, html = { "<!--", "-->" }, markdown = { "<!--", "-->" },
  ocaml = { "(*", "*)" },
  cpp = { "//" }, csharp = { "//" }, go = { "//" }, java = { "//" }, javascript = { "//" },
  js = { "//" }, json = { "//" }, kotlin = { "//" }, ojs = { "//" }, rust = { "//" },
  scala = { "//" }, scss = { "//" }, swift = { "//" }, typescript = { "//" }, typst = { "//" },
  haskell = { "--" }, lua = { "--" }, sql = { "--" }, mysql = { "--" }, psql = { "--" },
  vhdl = { "--" }, latex = { "%" }, matlab = { "%" }, tikz = { "%" }, mermaid = { "%%" },
  fortran = { "!" }, stata = { "*" },
}
local DEFAULT = { "#" }
local count = 0

local function escape(s) return (s:gsub("%p", "%%%0")) end

-- the block's lines without their markers, and {line number -> annotation number}
local function strip_markers(block)
  local chars = COMMENT[block.classes[1] or ""] or DEFAULT
  local tail = "%s*" .. escape(chars[1]) .. "%s*<(%d+)>%s*"
    .. (chars[2] and (escape(chars[2]) .. "%s*") or "") .. "$"
  local lines, marks, found, n = {}, {}, false, 0
  for line in (block.text .. "\n"):gmatch("(.-)\n") do
    n = n + 1
    local start, _, number = line:find(tail)
    if number then
      line, found = line:sub(1, start - 1), true
      marks[n] = tonumber(number)
    end
    table.insert(lines, line)
  end
  return found and table.concat(lines, "\n") or nil, marks
end

-- the code block of a block (itself, or the code of a cell) and a function that puts a
-- changed copy of it back
local function annotated_code(block)
  if block.t == "CodeBlock" then return block, function(code) return code end end
  if block.t == "Div" and block.classes:includes("cell") then
    for k, inner in ipairs(block.content) do
      if inner.t == "CodeBlock" and inner.classes:includes("cell-code") then
        return inner, function(code) block.content[k] = code; return block end
      end
    end
  end
  return nil
end

local function note_list(id, list, marks)
  local out = pandoc.Blocks({ pandoc.RawBlock("html", '<dl class="code-annotation-container-grid">') })
  for i, item in ipairs(list.content) do
    local number = list.start + i - 1
    local lines = {}
    for line, n in pairs(marks) do
      if n == number then table.insert(lines, line) end
    end
    table.sort(lines)
    local target = string.format('data-target-cell="%s" data-target-annotation="%d"', id, number)
    out:insert(pandoc.RawBlock("html", "<dt " .. target .. ">" .. number .. "</dt>\n<dd>"))
    out:insert(pandoc.Plain({ pandoc.Span(pandoc.utils.blocks_to_inlines(item), pandoc.Attr("", {}, {
      ["code-cell"] = id, ["code-lines"] = table.concat(lines, ","), ["code-annotation"] = tostring(number),
    })) }))
    out:insert(pandoc.RawBlock("html", "</dd>"))
  end
  out:insert(pandoc.RawBlock("html", "</dl>"))
  return out
end

local function annotate(blocks)
  local out, i, changed = pandoc.Blocks({}), 1, false
  while i <= #blocks do
    local code, put_back = annotated_code(blocks[i])
    local text, marks = nil, {}
    if code then text, marks = strip_markers(code) end
    if not text then
      out:insert(blocks[i])
    else
      changed = true
      code.text = text
      local pairs_ = {}
      for line, n in pairs(marks) do table.insert(pairs_, line .. ":" .. n) end
      table.sort(pairs_, function(a, b) return tonumber(a:match("^%d+")) < tonumber(b:match("^%d+")) end)
      code.attributes["code-annotations"] = table.concat(pairs_, ",")
      if code.identifier == "" then
        count = count + 1
        code.identifier = "annotated-cell-" .. count
      end
      out:insert(put_back(code))
      local list = blocks[i + 1]
      if list and list.t == "OrderedList" then
        out:extend(note_list(code.identifier, list, marks))
        i = i + 1
      end
    end
    i = i + 1
  end
  return changed and out or nil
end

return { { Blocks = annotate } }
