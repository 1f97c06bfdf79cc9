-- deckbuild: lay out executed cells the way Quarto's revealjs format does.
--   output-location: fragment | column | column-fragment | slide
--   code-line-numbers: true | false | "1,3|5-6" (steps, run by deckbuild.js)
--   fig-alt on an image becomes its alt text
-- (The document-wide `smaller` / `scrollable` options are classes on the .reveal element,
-- written by the template as Quarto's support plugin adds them; see pandoc.py.)

local slide_level = 2
local default_numbers = "true"

local function is_code(block)
  return block.t == "CodeBlock" and block.classes:includes("cell-code")
end

local function split_cell(div)
  local code, outputs = pandoc.Blocks({}), pandoc.Blocks({})
  for _, block in ipairs(div.content) do
    if is_code(block) then code:insert(block) else outputs:insert(block) end
  end
  return code, outputs
end

local function column(blocks, extra)
  local classes = {"column"}
  if extra then table.insert(classes, extra) end
  return pandoc.Div(blocks, pandoc.Attr("", classes, {width = "50%"}))
end

local function layout_cell(div)
  local where = div.attributes["output-location"]
  if not div.classes:includes("cell") or not where or where == "slide" then return nil end
  local code, outputs = split_cell(div)
  div.attributes["output-location"] = nil
  if where == "fragment" then
    div.content = code .. pandoc.Blocks({pandoc.Div(outputs, pandoc.Attr("", {"fragment"}))})
  elseif where == "column" or where == "column-fragment" then
    local right = column(outputs, where == "column-fragment" and "fragment" or nil)
    div.content = {pandoc.Div({column(code), right}, pandoc.Attr("", {"columns", "column-output-location"}))}
  end
  return div
end

local function code_block(block)
  local spec = block.attributes["code-line-numbers"]
  block.attributes["code-line-numbers"] = nil
  if spec == nil then
    if #block.classes == 0 or block.classes:includes("cell-output") then return block end
    spec = default_numbers
  end
  if spec ~= "false" then
    block.classes:insert("numberLines")
    if spec ~= "true" then block.attributes["data-code-line-numbers"] = spec end
  end
  return block
end

local function image(img)
  local alt = img.attributes["fig-alt"]
  if alt then
    img.attributes["fig-alt"] = nil
    img.attributes["alt"] = alt
  end
  return img
end

local function is_slide_break(block)
  return (block.t == "Header" and block.level <= slide_level) or block.t == "HorizontalRule"
end

-- Move the outputs of `output-location: slide` cells onto a new slide that follows the
-- slide holding the code, with its title and classes (as Quarto's revealjs postprocessor
-- copies the parent slide's classes).
local function outputs_to_slides(blocks)
  local out, pending, title = pandoc.Blocks({}), pandoc.Blocks({}), pandoc.Inlines({})
  local classes = pandoc.List({})
  local function flush()
    if #pending > 0 then
      local copied = classes:filter(function(c) return c ~= "output-location-slide" end)
      copied:insert("output-location-slide")
      out:insert(pandoc.Header(slide_level, title:clone(), pandoc.Attr("", copied)))
      out:extend(pending)
      pending = pandoc.Blocks({})
    end
  end
  for _, block in ipairs(blocks) do
    if is_slide_break(block) then
      flush()
      classes = pandoc.List({})
      if block.t == "Header" and block.level == slide_level then
        title, classes = block.content, block.classes:clone()
      end
      out:insert(block)
    elseif block.t == "Div" and block.classes:includes("cell")
        and block.attributes["output-location"] == "slide" then
      local code, outputs = split_cell(block)
      block.attributes["output-location"] = nil
      block.content = code
      out:insert(block)
      pending:insert(pandoc.Div(outputs, pandoc.Attr("", {"cell", "output-location-slide"})))
    else
      out:insert(block)
    end
  end
  flush()
  return out
end

function Pandoc(doc)
  local meta = doc.meta
  if meta["deckbuild-slide-level"] then
    slide_level = tonumber(pandoc.utils.stringify(meta["deckbuild-slide-level"])) or 2
  end
  if meta["deckbuild-code-line-numbers"] ~= nil then
    default_numbers = pandoc.utils.stringify(meta["deckbuild-code-line-numbers"])
  end
  local blocks = outputs_to_slides(doc.blocks)
  doc.blocks = blocks:walk({
    Div = layout_cell,
    CodeBlock = code_block,
    Image = image,
  })
  return doc
end
