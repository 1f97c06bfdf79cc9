-- deckbuild: callouts (note, tip, warning, important, caution) in Quarto's markup.
-- Runs before pandoc splits slides, so a "## Title" inside a callout becomes its title
-- instead of starting a new slide.

local TITLES = {
  note = "Note", tip = "Tip", warning = "Warning",
  important = "Important", caution = "Caution",
}

local function callout_kind(div)
  for _, class in ipairs(div.classes) do
    local kind = class:match("^callout%-(%a+)$")
    if kind and TITLES[kind] then return kind end
  end
  return nil
end

function Div(div)
  local kind = callout_kind(div)
  if not kind then return nil end
  local title = nil
  if div.attributes["title"] then
    title = pandoc.read(div.attributes["title"], "markdown").blocks[1]
    title = title and title.content or pandoc.Inlines(div.attributes["title"])
  end
  local body = pandoc.Blocks({})
  for i, block in ipairs(div.content) do
    if i == 1 and block.t == "Header" and not title then
      title = block.content
    else
      body:insert(block)
    end
  end
  title = title or pandoc.Inlines(TITLES[kind])
  local show_icon = div.attributes["icon"] ~= "false"
  local header_parts = pandoc.Blocks({})
  if show_icon then
    header_parts:insert(pandoc.Div({}, pandoc.Attr("", {"callout-icon-container"})))
    header_parts[1].content:insert(pandoc.Plain({pandoc.Span({}, pandoc.Attr("", {"callout-icon"}))}))
  end
  header_parts:insert(pandoc.Div({pandoc.Plain(title)}, pandoc.Attr("", {"callout-title-container"})))
  local classes = {"callout", "callout-" .. kind, "callout-titled", "callout-style-default"}
  for _, class in ipairs(div.classes) do
    if not class:match("^callout%-") then table.insert(classes, class) end
  end
  return pandoc.Div({
    pandoc.Div(header_parts, pandoc.Attr("", {"callout-header"})),
    pandoc.Div(body, pandoc.Attr("", {"callout-body-container", "callout-body"})),
  }, pandoc.Attr(div.identifier, classes))
end
