"""kgroup.server"""
