-- deckbuild: callouts (note, tip, warning, important, caution) in the markup Quarto writes
-- for revealjs, the same from 1.4 to today (https://quarto.org/docs/authoring/callouts.html):
--
--   <div class="callout callout-note callout-titled callout-style-default">
--     <div class="callout-body">
--       <div class="callout-title">
--         <div class="callout-icon-container"><i class="callout-icon"></i></div>
--         <p><strong>Title</strong></p>
--       </div>
--       <div class="callout-content"> ... </div>
--     </div>
--   </div>
--
-- The title comes from `title="..."`, else from a heading that opens the callout, else
-- (default appearance only) from the kind: "Note", "Tip"... `appearance="simple"` and
-- `"minimal"` (simple without icon) change the style class, `icon=false` drops the icon;
-- the document options callout-appearance and callout-icon (passed by pandoc.py as
-- deckbuild-callout-appearance / -icon) set them for every callout that does not.
-- An id, other classes or attributes go on a div wrapped around the callout.
-- Runs before pandoc splits slides, so a "## Title" inside a callout becomes its title
-- instead of starting a new slide.

local TITLES = {
  note = "Note", tip = "Tip", warning = "Warning",
  important = "Important", caution = "Caution",
}
local OWN_ATTRIBUTES = { title = true, appearance = true, icon = true, collapse = true }
local doc_appearance, doc_icon = "default", true

local function callout_kind(div)
  for _, class in ipairs(div.classes) do
    local kind = class:match("^callout%-(%a+)$")
    if kind and TITLES[kind] then return kind end
  end
  return nil
end

local function title_and_body(div, kind, appearance)
  local title = nil
  if div.attributes["title"] then
    title = pandoc.utils.blocks_to_inlines(pandoc.read(div.attributes["title"], "markdown").blocks)
  end
  local body = pandoc.Blocks({})
  for i, block in ipairs(div.content) do
    if i == 1 and block.t == "Header" and not title then
      title = block.content
    else
      body:insert(block)
    end
  end
  if (title == nil or #title == 0) and appearance == "default" then
    title = pandoc.Inlines(TITLES[kind])
  end
  return title, body
end

local function leftover_attr(div)
  local classes = pandoc.List({})
  for _, class in ipairs(div.classes) do
    if not class:match("^callout%-") and class ~= "callout" then classes:insert(class) end
  end
  local attributes = {}
  for key, value in pairs(div.attributes) do
    if not OWN_ATTRIBUTES[key] then attributes[key] = value end
  end
  return pandoc.Attr(div.identifier, classes, attributes), #classes > 0 or next(attributes) ~= nil
end

local function callout(div)
  local kind = callout_kind(div)
  if not kind then return nil end
  local appearance = div.attributes["appearance"] or doc_appearance
  local icon_attr = div.attributes["icon"]
  local icon = (icon_attr == nil and doc_icon or icon_attr ~= nil and icon_attr ~= "false")
    and appearance ~= "minimal"
  if appearance == "minimal" then appearance = "simple" end
  local title, content = title_and_body(div, kind, appearance)

  local icon_div = pandoc.Div({ pandoc.Plain({ pandoc.RawInline("html", '<i class="callout-icon"></i>') }) },
    pandoc.Attr("", { "callout-icon-container" }))
  local body = pandoc.Div({}, pandoc.Attr("", { "callout-body" }))
  local titled = title ~= nil and #title > 0
  if titled then
    local heading = pandoc.Div({}, pandoc.Attr("", { "callout-title" }))
    if icon then heading.content:insert(icon_div) end
    heading.content:insert(pandoc.Para({ pandoc.Strong(title) }))
    body.content:insert(heading)
  elseif icon then
    body.content:insert(icon_div)
  end
  body.content:insert(pandoc.Div(content, pandoc.Attr("", { "callout-content" })))

  local classes = { "callout", "callout-" .. kind }
  if not icon then table.insert(classes, "no-icon") end
  if titled then table.insert(classes, "callout-titled") end
  table.insert(classes, "callout-style-" .. appearance)
  local callout = pandoc.Div({ body }, pandoc.Attr("", classes))
  local attr, extra = leftover_attr(div)
  if div.identifier ~= "" or extra then
    return pandoc.Div({ callout }, attr)
  end
  return callout
end

local function options(meta)
  local function text(name)
    return meta[name] ~= nil and pandoc.utils.stringify(meta[name]) or nil
  end
  doc_appearance = text("deckbuild-callout-appearance") or doc_appearance
  doc_icon = text("deckbuild-callout-icon") ~= "false"
end

return {
  { Meta = options },
  { Div = callout },
}
