from sse_tool.cli import main

main()
